import { expect, it } from 'vitest';
import { PendingDeletes } from '../src/pending-deletes.js';

it('retries a failed delete until it answers, then stops', async () => {
  const deletes = new PendingDeletes(5);
  let calls = 0;
  const answered = new Promise<void>((resolve) => {
    deletes.add('k', async () => {
      calls += 1;
      if (calls < 3) throw new Error('unreachable');
      resolve();
    });
  });
  await answered;
  expect(calls).toBe(3);
  // Its timer would be found open by the suite's close() cases if close() left it running.
  deletes.close();
});
