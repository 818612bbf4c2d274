/**
 * What a perfectly fair FIFO lock would score for fairness (max / min acquisitions per worker) in the
 * same measurement, on average, if every slice began its queue in a random order: the same number
 * of workers, the same acquisitions in each slice. Each slice starts every worker at once, and turns
 * then go round in the queue's order: with A acquisitions among N workers, A mod N workers get one
 * turn more than the others. Over a few short slices those extra turns fall unevenly, so even a
 * perfect lock scores well above 1 when each worker gets only a few turns per slice. It is a model,
 * not a bound: a queue that starts in the same order every slice scores worse, one that rotates
 * better. A row's fairness is read beside it.
 */
export function fifoFairnessFloor(acquisitionsPerSlice: readonly number[], workers: number, trials = 2_000): number | null {
  if (workers < 1 || acquisitionsPerSlice.length === 0) return null;
  const random = seeded(0x5eed);
  let sum = 0;
  const totals = new Array<number>(workers);
  const order = Array.from({ length: workers }, (_, index) => index);
  for (let trial = 0; trial < trials; trial += 1) {
    totals.fill(0);
    for (const acquisitions of acquisitionsPerSlice) {
      shuffle(order, random);
      const base = Math.floor(acquisitions / workers);
      const extra = acquisitions % workers;
      for (let position = 0; position < workers; position += 1) totals[order[position]!]! += base + (position < extra ? 1 : 0);
    }
    const least = Math.min(...totals);
    if (least === 0) return null; // even a perfect lock leaves a worker unserved: fairness is infinite
    sum += Math.max(...totals) / least;
  }
  return Math.round((sum / trials) * 100) / 100;
}

/** Fisher-Yates, in place. */
function shuffle(items: number[], random: () => number): void {
  for (let index = items.length - 1; index > 0; index -= 1) {
    const other = Math.floor(random() * (index + 1));
    [items[index], items[other]] = [items[other]!, items[index]!];
  }
}

/** mulberry32: a small seeded generator, so that the floor is the same for the same counts. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}
