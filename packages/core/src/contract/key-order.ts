/** Code-unit order: the same on every client, whatever its locale. */
export function defaultKeyOrder(fullKeys: readonly string[]): string[] {
  return [...fullKeys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
