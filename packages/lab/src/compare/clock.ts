/** Wall-clock milliseconds with sub-millisecond resolution: every event of a comparison run is stamped by it. */
export function now(): number {
  return performance.timeOrigin + performance.now();
}
