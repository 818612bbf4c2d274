import { describe, expect, it } from 'vitest';
import { createRedisBackend, redisModes } from '../src/index.js';

// No I/O: the hint is read from the mode's capabilities (connections open on first use only).
describe('capabilityHint names the fair mode where a mode lacks its primitives', () => {
  for (const mode of redisModes) {
    it(`${mode}: read-write locks and semaphores ${mode === 'fair' ? 'need no hint' : 'point to ?mode=fair'}; other capabilities get none`, async () => {
      const backend = createRedisBackend({
        mode,
        nodes: mode === 'redlock' ? ['127.0.0.1:1', '127.0.0.1:2', '127.0.0.1:3'] : ['127.0.0.1:1'],
      });
      try {
        for (const capability of ['readWrite', 'semaphore'] as const) {
          const hint = backend.capabilityHint(capability);
          if (mode === 'fair') expect(hint).toBeUndefined();
          else expect(hint).toContain('?mode=fair');
        }
        expect(backend.capabilityHint('fencing')).toBeUndefined();
        expect(backend.capabilityHint('election')).toBeUndefined();
      } finally {
        await backend.close();
      }
    });
  }
});
