import { packageConfig } from '../../vitest.shared.js';

// npm installs from the registry (cached after the first run) and two vitest runs in a child app.
export default packageConfig('servers', { test: { testTimeout: 240_000, hookTimeout: 240_000 } });
