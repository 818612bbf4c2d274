import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Output } from '../src/output.js';

/** A stream that records what is written and says whether it is a terminal. */
function sink(isTTY: boolean): Writable & { isTTY: boolean; text(): string } {
  let written = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      written += chunk.toString();
      done();
    },
  });
  return Object.assign(stream, { isTTY, text: () => written });
}

const csi = '\u001b[';

describe('colour', () => {
  it('an error is red on a terminal', () => {
    const stderr = sink(true);
    new Output({ stdout: sink(true), stderr, env: {} }).error('boom');
    expect(stderr.text()).toBe(`${csi}31mdeadbolt:${csi}0m boom\n`);
  });

  it.each([
    ['stderr is not a terminal', false, {}],
    ['NO_COLOR is set', true, { NO_COLOR: '1' }],
  ])('no colour when %s', (_when, isTTY, env) => {
    const stderr = sink(isTTY);
    new Output({ stdout: sink(isTTY), stderr, env }).error('boom');
    expect(stderr.text()).toBe('deadbolt: boom\n');
  });

  it('data on stdout never has colour, even on a terminal', () => {
    const stdout = sink(true);
    new Output({ stdout, stderr: sink(true), env: {} }).data('worker-7');
    expect(stdout.text()).toBe('worker-7\n');
  });
});
