// The production lock service (src/lock) inside a simulated member: its proposals go through the
// member's production driver, its change feed follows the member's MVCC store (a snapshot install
// replaces the store, so every read goes through the applier), and its timers are simulated.
import { simGuard } from './sim-guard.js';
import type { AppliedState } from '../lock/change-feed.js';
import { ChangeFeed } from '../lock/change-feed.js';
import { LockService } from '../lock/lock-service.js';
import { QueueContender, type QueueCell, type QueueMetrics } from '../lock/queue.js';
import { LogProposer } from '../driver/command-proposer.js';
import { mvccLog } from './lease-member.js';
import type { NodeDriver } from '../driver/driver.js';
import type { Timers } from '../base/timers.js';
import type { MvccApplier } from './mvcc-machine.js';
import { requestTimeoutMs, type AppliedOutcome } from './server-driver.js';

/** What the lock workload lends every member's lock service. */
export interface SimLockEnv {
  /** A proposal id unique across the run. */
  nextProposalId(): Uint8Array;
  readonly metrics: QueueMetrics;
  /** Test-only broken rules (teeth for the lock checker). */
  readonly bugs: { readonly grantOnWake?: boolean; readonly withdrawRetriedEntry?: boolean };
}

export interface SimLocks {
  readonly locks: LockService;
  readonly feed: ChangeFeed;
}

export function createSimLocks(
  driver: NodeDriver<AppliedOutcome>,
  applier: MvccApplier,
  timers: Timers,
  wallMs: () => number,
  env: SimLockEnv,
): SimLocks {
  const state: AppliedState = {
    get revision() {
      return applier.store.revision;
    },
    range: (request) => applier.store.range(request),
    events: (options) => applier.store.events(options),
  };
  // No member id in the envelope: the lock workload's dedup clock follows every stamp.
  const proposer = new LogProposer(mvccLog(driver, () => env.nextProposalId()), {
    limits: applier.store.limits,
    wallMs,
    monotonicMs: () => timers.monotonicMs(),
  });
  const cell: QueueCell = {
    propose: (op, requestId, origin) => proposer.propose(op, requestId, origin),
    linearizableRange: async (request) => {
      await driver.linearizableRead();
      return applier.store.range(request);
    },
    localRange: (request) => applier.store.range(request),
  };
  const feed = new ChangeFeed(state);
  const clock = { monotonicMs: () => timers.monotonicMs(), after: (ms: number, callback: () => void) => timers.setTimeout(callback, ms) };
  const contender = new QueueContender(cell, feed, clock, env.metrics, { requestTimeoutMs, bugs: env.bugs });
  return { locks: new LockService(cell, contender, simGuard(() => applier.store), wallMs), feed };
}
