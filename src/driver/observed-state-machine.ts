// A state machine with an observer on the side: everything goes to the inner machine, and after
// each applied batch or snapshot install a subclass looks at what happened (leases, membership).
import type { Entry, Snapshot } from '../raft/index.js';
import type { StateMachine } from './types.js';

export abstract class ObservedStateMachine<Outcome> implements StateMachine<Outcome> {
  constructor(private readonly inner: StateMachine<Outcome>) {}

  /** Called after `entries` were applied, with their outcomes in order. */
  protected abstract applied(entries: readonly Entry[], outcomes: readonly Outcome[]): void;
  /** Called after the inner machine was replaced by `snapshot`. */
  protected abstract restored(snapshot: Snapshot): void;

  appliedIndex(): number {
    return this.inner.appliedIndex();
  }

  applyBatch(entries: readonly Entry[]): Outcome[] {
    const outcomes = this.inner.applyBatch(entries);
    this.applied(entries, outcomes);
    return outcomes;
  }

  snapshotData(): Uint8Array {
    return this.inner.snapshotData();
  }

  snapshotChunks(): Iterable<Uint8Array> {
    return this.inner.snapshotChunks?.() ?? [this.inner.snapshotData()];
  }

  restore(snapshot: Snapshot): void {
    this.inner.restore(snapshot);
    this.restored(snapshot);
  }
}
