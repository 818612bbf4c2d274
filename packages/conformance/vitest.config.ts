import { packageConfig } from '../../vitest.shared.js';

// Its own global setup from source: the package cannot import its own build by name before it exists.
export default packageConfig('servers', {}, './src/servers/global-setup.ts');
