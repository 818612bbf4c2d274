import { createLockClient } from '@deadbolt/core';
import { memoryCapabilities } from '@deadbolt/core/adapter';
import { describeLockConformance } from '../src/index.js';

describeLockConformance({
  name: 'memory',
  capabilities: memoryCapabilities,
  create: (_, { prefix }) => createLockClient({ url: 'memory://conformance', prefix }),
});
