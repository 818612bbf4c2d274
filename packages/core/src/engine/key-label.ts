/** How a set of keys is named in errors and spans: all of a few, else the first and the count (7,000 keys joined made a 50 kB message). */
export function multiLabel(keys: readonly string[]): string {
  return keys.length <= 3 ? keys.join(', ') : `${keys[0]}, ... (${keys.length} keys)`;
}
