// Builds a node's locks and elections: one change feed over the applied store, one contender
// logic shared by both, and their metrics (wait time, contention, wake-ups, give-ups).
import { ElectionService } from '../lock/election-service.js';
import { ChangeFeed } from '../lock/change-feed.js';
import { LockService, defaultLockLimits } from '../lock/lock-service.js';
import { QueueContender, type QueueCell, type QueueMetrics } from '../lock/queue.js';
import type { MvccStore } from '../mvcc/index.js';
import type { AccessGuard } from '../auth/index.js';
import type { CellService } from '../kv/cell-service.js';
import { Counter, Gauge, Histogram, type Registry } from '../metrics/registry.js';
import type { Timers } from '../base/timers.js';

export interface NodeLocks {
  readonly locks: LockService;
  readonly elections: ElectionService;
  readonly feed: ChangeFeed;
  /** Call after every applied batch. */
  onApplied(): void;
  /** The node is stopping: waiting and retrying contenders give up (no timer outlives the node). */
  stop(): void;
}

export function createNodeLocks(options: {
  cell: CellService;
  store: MvccStore;
  guard: AccessGuard;
  timers: Timers;
  registry: Registry;
  /** The node's request timeout (a retried acquire's recheck is answered within it). */
  requestTimeoutMs: number;
}): NodeLocks {
  const feed = new ChangeFeed(options.store);
  const metrics = lockMetrics(options.registry, feed);
  const { timers, cell } = options;
  const clock = { monotonicMs: () => timers.monotonicMs(), after: (ms: number, callback: () => void) => timers.setTimeout(callback, ms) };
  // Entering a lock's or an election's queue passes through the tenants' fair queues (#28).
  const lockCell: QueueCell = {
    propose: (op, requestId, origin) => cell.proposeLockStep(op, requestId, origin),
    linearizableRange: (request) => cell.linearizableRange(request),
    localRange: (request) => cell.localRange(request),
  };
  const contender = new QueueContender(lockCell, feed, clock, metrics, { requestTimeoutMs: options.requestTimeoutMs });
  // A move's fence (or any ownership change) wakes the waiters of queues this cell stops writing.
  let ownershipChanges = options.store.lastOwnershipChange().count;
  const onApplied = (): void => {
    feed.onApplied();
    const changes = options.store.lastOwnershipChange().count;
    if (changes === ownershipChanges) return;
    ownershipChanges = changes;
    feed.onOwnershipChanged((prefix) => options.store.refuseCommand({ type: 'delete', key: prefix, prefix: true }) !== null);
  };
  return {
    locks: new LockService(lockCell, contender, options.guard, () => Date.now(), defaultLockLimits),
    elections: new ElectionService(lockCell, contender, feed, options.guard, defaultLockLimits),
    feed,
    onApplied,
    stop: () => contender.stop(),
  };
}

function lockMetrics(registry: Registry, feed: ChangeFeed): QueueMetrics {
  const waitSeconds = registry.add(
    new Histogram('baton_lock_wait_seconds', 'Time from acquire/campaign to grant, contended grants only',
      [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300]),
  );
  const grants = registry.add(new Counter('baton_lock_grants_total', 'Locks and leaderships granted, by contention'));
  const wakeups = registry.add(
    new Counter('baton_lock_wakeups_total', 'Waiters woken because the entry ahead of them changed (one per release when nobody herds)'),
  );
  const gaveUp = registry.add(new Counter('baton_lock_gave_up_total', 'Waits ended without a grant, by reason'));
  let waiting = 0;
  registry.add(new Gauge('baton_lock_waiters', 'Contenders waiting on this node', () => waiting));
  registry.add(new Gauge('baton_lock_feed_subscriptions', 'Key and prefix subscriptions of the lock change feed', () => feed.subscriptions));
  return {
    wakeup: () => wakeups.inc(),
    granted: (waitedMs, contended) => {
      grants.inc({ contended: String(contended) });
      if (contended) waitSeconds.observe(waitedMs / 1000);
    },
    gaveUp: (reason) => gaveUp.inc({ reason }),
    waiting: (delta) => {
      waiting += delta;
    },
  };
}
