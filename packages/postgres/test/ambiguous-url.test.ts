import { describeAmbiguousUrls } from '@deadbolt/conformance';
import { resolvePostgresOptions } from '../src/index.js';

// Issue 14 item 4: a password with an unencoded '/', '?', '#' or '@' is refused before any I/O.
describeAmbiguousUrls({ backend: 'postgres', resolve: resolvePostgresOptions });
