// The production lock service (src/lock) inside a simulated member: its proposals go through the
// member's production driver, its change feed follows the member's MVCC store (a snapshot install
// replaces the store, so every read goes through the applier), and its timers are simulated.
import type { AppliedState } from '../lock/change-feed.js';
import { ChangeFeed } from '../lock/change-feed.js';
import { LockService } from '../lock/lock-service.js';
import { QueueContender, type QueueCell, type QueueMetrics } from '../lock/queue.js';
import { encodeCommand } from '../mvcc/index.js';
import type { NodeDriver } from '../driver/driver.js';
import type { Timers } from '../base/timers.js';
import type { MvccApplier } from './mvcc-machine.js';
import type { AppliedOutcome } from './server-driver.js';

/** What the lock workload lends every member's lock service. */
export interface SimLockEnv {
  /** A proposal id unique across the run. */
  nextProposalId(): Uint8Array;
  readonly metrics: QueueMetrics;
  /** Test-only broken rules (teeth for the lock checker). */
  readonly bugs: { readonly grantOnWake?: boolean };
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
  const cell: QueueCell = {
    proposeCommand: async (op, requestId) => {
      const command = encodeCommand(
        { ...(requestId !== undefined ? { requestId } : {}), proposedAtMs: wallMs(), op },
        applier.store.limits,
      );
      const outcome = (await driver.propose(env.nextProposalId(), command)).mvcc;
      if (outcome === undefined) throw new Error('a lock command applied without an MVCC outcome');
      if (outcome.type === 'failed') throw outcome.error;
      if (outcome.type !== 'applied') throw new Error(`a lock command applied as ${outcome.type}`);
      return { result: outcome.result, duplicate: outcome.duplicate };
    },
    linearizableRange: async (request) => {
      await driver.linearizableRead();
      return applier.store.range(request);
    },
    localRange: (request) => applier.store.range(request),
  };
  const feed = new ChangeFeed(state);
  const clock = { monotonicMs: () => timers.monotonicMs(), after: (ms: number, callback: () => void) => timers.setTimeout(callback, ms) };
  const contender = new QueueContender(cell, feed, clock, env.metrics, env.bugs);
  return { locks: new LockService(cell, contender, wallMs), feed };
}
