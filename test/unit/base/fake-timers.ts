// Timers (src/base/timers.ts) on a clock the test moves by hand, for the unit tests of the parts
// that take time only through them (compactor, lease service, driver).
import type { Timers } from '../../../src/base/timers.js';

/** Lets promise callbacks (a proposal's answer) run. */
export const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

export class FakeTimers implements Timers {
  private timers: { atMs: number; callback: () => void; cancelled: boolean }[] = [];
  constructor(public nowMs = 0) {}
  setTimeout(callback: () => void, ms: number): { cancel(): void } {
    const timer = { atMs: this.nowMs + ms, callback, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }
  monotonicMs(): number {
    return this.nowMs;
  }
  pending(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }
  /** Moves the clock by `ms` at once, then runs the timers due by then in the order they were set. */
  jump(ms: number): void {
    this.nowMs += ms;
    const due = this.timers.filter((t) => t.atMs <= this.nowMs && !t.cancelled);
    this.timers = this.timers.filter((t) => t.atMs > this.nowMs && !t.cancelled);
    for (const timer of due) timer.callback();
  }
  /** Runs every timer due up to `nowMs + ms` in time order, at its own time, settling after each. */
  async advance(ms: number): Promise<void> {
    const endMs = this.nowMs + ms;
    for (;;) {
      const live = this.timers.filter((t) => !t.cancelled && t.atMs <= endMs).sort((a, b) => a.atMs - b.atMs);
      const next = live[0];
      if (next === undefined) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.nowMs = next.atMs;
      next.callback();
      await settle();
    }
    this.nowMs = endMs;
    await settle();
  }
}
