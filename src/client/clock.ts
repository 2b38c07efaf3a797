// The client's clock: monotonic milliseconds that read the same in every thread of the process.
import type { ClientClock } from './types.js';

/**
 * Monotonic milliseconds on the process-wide clock (CLOCK_MONOTONIC via hrtime). Unlike
 * performance.now(), which counts from each thread's own start, this reads the same in every
 * worker_thread, so a safeUntil written by a worker is comparable on the main thread. It never
 * jumps with the wall clock.
 */
export function monotonicNowMs(): number {
  return Number(process.hrtime.bigint() / 1_000n) / 1_000;
}

export const systemClock: ClientClock = {
  monotonicMs: monotonicNowMs,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};
