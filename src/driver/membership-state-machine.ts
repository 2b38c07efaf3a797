// The state machine as the driver sees it, plus membership: after a batch with configuration
// entries is applied (the store has kept their member table), the node's directory and peer
// transport follow the configuration; after a snapshot install, they follow the snapshot's.
import { EntryType, decodeConfEntry, type ConfState, type Entry, type Snapshot } from '../raft/index.js';
import { ObservedStateMachine } from './observed-state-machine.js';

export interface MembershipListener {
  onConfigApplied(next: ConfState): void;
  onRestored(next: ConfState): void;
}

export class MembershipAwareStateMachine<Outcome> extends ObservedStateMachine<Outcome> {
  private listener: MembershipListener | null = null;

  /** Set once the node's membership service exists (it needs the driver, built after this). */
  attach(listener: MembershipListener): void {
    this.listener = listener;
  }

  protected applied(entries: readonly Entry[]): void {
    for (const entry of entries) {
      if (entry.type === EntryType.config) this.listener?.onConfigApplied(decodeConfEntry(entry.data).confState);
    }
  }

  protected restored(snapshot: Snapshot): void {
    this.listener?.onRestored(snapshot.meta.confState);
  }
}
