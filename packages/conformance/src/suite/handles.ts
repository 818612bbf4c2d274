/** Resource kinds that keep a process alive and that a lock client could leak. */
const COUNTED = new Set(['TCPWrap', 'Timeout', 'PipeWrap', 'TCPSocketWrap', 'TTYWrap']);

/** Sockets and timers alive right now (process.getActiveResourcesInfo). */
export function handleCount(): number {
  return process.getActiveResourcesInfo().filter((kind) => COUNTED.has(kind)).length;
}
