// The disk and state machine the driver unit tests give a NodeDriver: a disk whose writes the test
// completes by hand (all at once or one at a time), and a machine that only counts what it applied.
import type { Entry, Ready, Snapshot } from '../../../src/raft/index.js';
import type { LogStore, StateMachine } from '../../../src/driver/types.js';

/** Each write waits for completeAll() while `hold` is on (on from the start unless told otherwise). */
export class HeldDisk implements LogStore {
  readonly pending: (() => void)[] = [];
  constructor(public hold = true) {}
  persist(_ready: Ready): Promise<void> {
    if (!this.hold) return Promise.resolve();
    return new Promise((resolve) => this.pending.push(resolve));
  }
  async saveSnapshot(_snapshot: Snapshot): Promise<void> {}
  /** Completes the write handed over `index`-th among those still pending (0 is the oldest). */
  complete(index: number): void {
    const [done] = this.pending.splice(index, 1);
    done?.();
  }
  completeAll(): void {
    for (const done of this.pending.splice(0)) done();
  }
}

export class CountingMachine implements StateMachine<number> {
  applied = 0;
  appliedIndex(): number {
    return this.applied;
  }
  applyBatch(entries: readonly Entry[]): number[] {
    return entries.map((entry) => (this.applied = entry.index));
  }
  snapshotData(): Uint8Array {
    return new Uint8Array();
  }
  restore(): void {}
}
