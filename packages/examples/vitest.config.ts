import { packageConfig } from '../../vitest.shared.js';

// The demo runs against a real, password-protected Redis in one test (no credential in any output).
export default packageConfig('servers');
