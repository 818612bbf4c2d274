import { packageConfig } from '../../vitest.shared.js';

export default packageConfig('unit', { test: { testTimeout: 60_000 } });
