import { createLockClient, memoryCapabilities } from '@deadbolt/core';
import { describeLockConformance } from '../src/index.js';

describeLockConformance({
  name: 'memory',
  capabilities: memoryCapabilities,
  create: (_, { prefix }) => createLockClient({ url: 'memory://conformance', prefix }),
});
