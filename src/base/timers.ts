// Time at the edge, injected so the deterministic core, the simulator and tests can drive it.

export interface Timers {
  readonly setTimeout: (callback: () => void, ms: number) => { cancel(): void };
  readonly monotonicMs: () => number;
  /**
   * Runs `callback` once the I/O callbacks already due have run (setImmediate). Optional: without
   * it the driver handles each proposal and message batch at once.
   */
  readonly soon?: (callback: () => void) => void;
}
