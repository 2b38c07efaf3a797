// The state machine as the lease service sees it: the MVCC store's, plus a look at each applied
// outcome, so the leader's expiry tracker learns of grants and revocations in log order (the
// same moment every replica's table changes). Followers' trackers are empty and ignore this.
import type { Entry } from '../raft/index.js';
import type { ApplyOutcome } from '../mvcc/index.js';
import type { StateMachine } from './types.js';
import { ObservedStateMachine } from './observed-state-machine.js';
import type { LeaseOutcomeObserver } from '../lease/api.js';


/** Tell the observer what one applied outcome did to the lease table. */
export function observeLeaseOutcome(outcome: ApplyOutcome, observer: LeaseOutcomeObserver): void {
  // A duplicate is an earlier outcome answered again: the table did not change.
  if (outcome.type !== 'applied' || outcome.duplicate) return;
  const result = outcome.result;
  if (result.type === 'leaseGrant') observer.leaseGranted(result.id, result.ttlMs);
  else if (result.type === 'leaseRevoke') observer.leaseRevoked(result.id);
}

export class LeaseAwareStateMachine extends ObservedStateMachine<ApplyOutcome> {
  constructor(
    inner: StateMachine<ApplyOutcome>,
    private readonly observer: LeaseOutcomeObserver,
  ) {
    super(inner);
  }

  protected applied(_entries: readonly Entry[], outcomes: readonly ApplyOutcome[]): void {
    for (const outcome of outcomes) observeLeaseOutcome(outcome, this.observer);
  }

  protected restored(): void {
    this.observer.leasesRestored();
  }
}
