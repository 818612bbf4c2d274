import { describeAmbiguousUrls } from '@deadbolt/conformance';
import { resolveMemcachedOptions } from '../src/index.js';

// Issue 14 item 4: a password with an unencoded '/', '?', '#' or '@' is refused before any I/O.
describeAmbiguousUrls({ backend: 'memcached', resolve: resolveMemcachedOptions });
