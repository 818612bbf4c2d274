/**
 * The sequential model the harness's register histories are checked against: a register holding a
 * number, with read, write and compare-and-set (Knossos's cas-register). A compare-and-set stands
 * for one hold's read-modify-write: it read `from` and wrote `to`, as one step.
 */
import type { Model } from './linearizability.js';

export type RegisterInput =
  | { readonly f: 'read'; readonly value: number }
  | { readonly f: 'write'; readonly value: number }
  | { readonly f: 'cas'; readonly from: number; readonly to: number };

export function registerModel(init = 0): Model<number, RegisterInput> {
  return {
    init,
    step(state, input) {
      switch (input.f) {
        case 'read':
          return input.value === state ? state : undefined;
        case 'write':
          return input.value;
        case 'cas':
          return input.from === state ? input.to : undefined;
      }
    },
    key: (state) => String(state),
  };
}

export function describeInput(input: RegisterInput): string {
  switch (input.f) {
    case 'read':
      return `read ${input.value}`;
    case 'write':
      return `write ${input.value}`;
    case 'cas':
      return `read ${input.from}, write ${input.to}`;
  }
}
