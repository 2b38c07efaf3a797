// The state machine as the driver sees it, plus membership: after a batch with configuration
// entries is applied (the store has kept their member table), the node's directory and peer
// transport follow the configuration; after a snapshot install, they follow the snapshot's.
import { EntryType, decodeConfEntry, type ConfState, type Entry, type Snapshot } from '../raft/index.js';
import type { StateMachine } from './types.js';

export interface MembershipListener {
  onConfigApplied(next: ConfState): void;
  onRestored(next: ConfState): void;
}

export class MembershipAwareStateMachine<Outcome> implements StateMachine<Outcome> {
  private listener: MembershipListener | null = null;

  constructor(private readonly inner: StateMachine<Outcome>) {}

  /** Set once the node's membership service exists (it needs the driver, built after this). */
  attach(listener: MembershipListener): void {
    this.listener = listener;
  }

  appliedIndex(): number {
    return this.inner.appliedIndex();
  }

  applyBatch(entries: readonly Entry[]): Outcome[] {
    const outcomes = this.inner.applyBatch(entries);
    for (const entry of entries) {
      if (entry.type === EntryType.config) this.listener?.onConfigApplied(decodeConfEntry(entry.data).confState);
    }
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
    this.listener?.onRestored(snapshot.meta.confState);
  }
}
