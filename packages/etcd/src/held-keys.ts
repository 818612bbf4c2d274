/**
 * Contender keys this client has in use. Go keys a contender by lease alone, so two holds of one
 * name on one session would share a key and both "hold" it; here a second owner of the same name
 * gets the next free slot (`<lease hex>_1`, ...), a contender of its own.
 */
export class HeldKeys {
  private readonly inUse = new Set<string>();

  /** The first slot's key not in use, reserved until free(). */
  take(keyOf: (slot: number) => string): string {
    for (let slot = 0; ; slot += 1) {
      const key = keyOf(slot);
      if (!this.inUse.has(key)) {
        this.inUse.add(key);
        return key;
      }
    }
  }

  free(key: string): void {
    this.inUse.delete(key);
  }
}
