import { registerBackend, type BackendFactory } from '@deadbolt/core/adapter';
import { ExamplePgBackend } from './backend.js';
import { resolveExamplePgOptions, type ExamplePgOptions } from './options.js';
import { examplePgStatements } from './sql.js';

/**
 * `example-pg://user:password@host:5432/database?table=deadbolt_example_locks` for
 * createLockClient. Everything is checked here, before any I/O; connections open on first use.
 */
export const examplePgBackendFactory: BackendFactory = ({ url, urlText, options }) => {
  const resolved = resolveExamplePgOptions(urlText ?? url, options);
  return new ExamplePgBackend(resolved, examplePgStatements(resolved.table));
};

/** The backend without createLockClient: `createLockClient({ backend: createExamplePgBackend(url), ... })`. */
export function createExamplePgBackend(url: string, options: ExamplePgOptions = {}): ExamplePgBackend {
  return examplePgBackendFactory({ urlText: url, options: options as Readonly<Record<string, unknown>> }) as ExamplePgBackend;
}

registerBackend('example-pg', examplePgBackendFactory);

export { ExamplePgBackend } from './backend.js';
export { examplePgCapabilities } from './capabilities.js';
export { resolveExamplePgOptions, type ExamplePgOptions, type ResolvedExamplePgOptions } from './options.js';
export { examplePgStatements, type ExamplePgStatements } from './sql.js';

/** Types `options` by scheme in createLockClient (`{ url: 'example-pg://...', options }`). */
declare module '@deadbolt/core' {
  interface BackendOptionsByScheme {
    'example-pg': ExamplePgOptions;
  }
}
