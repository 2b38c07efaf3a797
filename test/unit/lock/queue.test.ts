// The lock queue logic against a real MVCC store applied in-process (no Raft, no network), with
// a hand-driven clock: who gets woken, when a grant happens, and what a waiter's end leaves behind.
import { AccessGuard } from '../../../src/auth/index.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntryType } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand } from '../../../src/mvcc/index.js';
import type { Command, CommandResult, Proposed, RangeRequest } from '../../../src/mvcc/index.js';
import { answerOf } from '../../../src/driver/command-proposer.js';
import { ChangeFeed } from '../../../src/lock/change-feed.js';
import { QueueContender, answerGraceMs, type QueueCell, type QueueMetrics } from '../../../src/lock/queue.js';
import { LockService } from '../../../src/lock/lock-service.js';
import { TimeoutError, UnavailableError } from '../../../src/base/errors.js';

class InProcessCell implements QueueCell {
  readonly store = new MvccStore(new MemoryEngine(), defaultMvccLimits);
  readonly feed = new ChangeFeed(this.store);
  private index = 0;
  /** Runs right after the next applied command, before its proposer hears the answer. */
  afterNextApply: (() => void) | null = null;

  apply(op: Command, requestId?: string): CommandResult {
    return this.applyWithId(op, requestId).result;
  }

  /** Applies as the log would, Request-ID table included (a retry is answered `duplicate`). */
  applyWithId<C extends Command>(op: C, requestId: string | undefined): Proposed<C> {
    const data = encodeCommand({ proposedAtMs: 1, op, ...(requestId === undefined ? {} : { requestId }) }, defaultMvccLimits);
    const [outcome] = this.store.applyBatch([{ index: ++this.index, term: 1, type: EntryType.normal, data }]);
    this.feed.onApplied();
    assert.ok(outcome !== undefined);
    return answerOf(op, outcome);
  }

  async propose<C extends Command>(op: C, requestId?: string): Promise<Proposed<C>> {
    await Promise.resolve();
    const applied = this.applyWithId(op, requestId);
    const hook = this.afterNextApply;
    this.afterNextApply = null;
    hook?.();
    return applied;
  }

  async linearizableRange(request: RangeRequest) {
    return this.store.range(request);
  }

  localRange(request: RangeRequest) {
    return this.store.range(request);
  }
}

class ManualClock {
  now = 0;
  private timers: { at: number; callback: () => void; cancelled: boolean }[] = [];
  monotonicMs = (): number => this.now;
  after = (ms: number, callback: () => void) => {
    const timer = { at: this.now + ms, callback, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => { timer.cancelled = true; } };
  };
  /** Moves to now + ms, firing due timers in time order, also those set while it moves. */
  async advance(ms: number): Promise<void> {
    const target = this.now + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= target && !t.cancelled).sort((x, y) => x.at - y.at)[0];
      if (due === undefined) break;
      this.now = Math.max(this.now, due.at);
      due.cancelled = true;
      due.callback();
      await settle();
    }
    this.now = target;
    await settle();
  }
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};

/**
 * A cell whose proposals, once `dropping`, never commit: each answers `timeout` only at the
 * node's request timeout, as a forwarded proposal dropped by a leader over its uncommitted limit.
 */
class DroppingCell extends InProcessCell {
  dropping = false;
  dropped = 0;
  constructor(private readonly clock: ManualClock, private readonly requestTimeoutMs: number) {
    super();
  }

  override async propose<C extends Command>(op: C): Promise<Proposed<C>> {
    if (!this.dropping) return super.propose(op);
    this.dropped++;
    return new Promise((_, reject) => {
      this.clock.after(this.requestTimeoutMs, () => reject(new TimeoutError('the outcome is unknown')));
    });
  }
}

function setup(makeCell: (clock: ManualClock) => InProcessCell = () => new InProcessCell()) {
  const clock = new ManualClock();
  const cell = makeCell(clock);
  const counts = { wakeups: 0, granted: 0, gaveUp: [] as string[], waiting: 0 };
  const metrics: QueueMetrics = {
    wakeup: () => counts.wakeups++,
    granted: () => counts.granted++,
    gaveUp: (reason) => counts.gaveUp.push(reason),
    waiting: (delta) => { counts.waiting += delta; },
  };
  const locks = new LockService(cell, new QueueContender(cell, cell.feed, clock, metrics, { requestTimeoutMs: 5_000 }), new AccessGuard(cell.store), () => 0);
  for (let id = 1; id <= 5; id++) cell.apply({ type: 'leaseGrant', ttlMs: 10_000, id });
  return { cell, clock, counts, locks };
}

test('a release wakes exactly the waiter behind it, and grants go in queue order', async () => {
  const { counts, locks } = setup();
  const a = await locks.acquire('l', { lease: 1, owner: 'a', waitMs: 60_000 }, undefined, '');
  const order: string[] = [];
  const b = locks.acquire('l', { lease: 2, owner: 'b', waitMs: 60_000 }, undefined, '').then((g) => { order.push('b'); return g; });
  await settle();
  const c = locks.acquire('l', { lease: 3, owner: 'c', waitMs: 60_000 }, undefined, '').then((g) => { order.push('c'); return g; });
  await settle();
  assert.equal(counts.waiting, 2);
  await locks.release('l', a.key, undefined, '');
  const bGrant = await b;
  await settle();
  assert.equal(counts.wakeups, 1, 'only b woke');
  assert.deepEqual(order, ['b']);
  await locks.release('l', bGrant.key, undefined, '');
  const cGrant = await c;
  assert.equal(counts.wakeups, 2);
  assert.ok(a.fencingToken < bGrant.fencingToken && bGrant.fencingToken < cGrant.fencingToken);
  assert.equal(counts.waiting, 0);
});

test('a predecessor deleted between the listing and the subscription still wakes its waiter', async () => {
  const { cell, locks } = setup();
  const a = await locks.acquire('l', { lease: 1, owner: 'a', waitMs: 60_000 }, undefined, '');
  // A's entry goes right after B's create applied, before B's proposer hears where it stands.
  cell.afterNextApply = () => cell.apply({ type: 'delete', key: a.key });
  const b = await Promise.race([
    locks.acquire('l', { lease: 2, owner: 'b', waitMs: 60_000 }, undefined, ''),
    settle().then(() => null),
  ]);
  assert.ok(b !== null, 'b was granted without any further event');
  assert.ok(b.fencingToken > a.fencingToken);
});

test('a waiter whose lease ends is never granted and leaves no entry; the next one is', async () => {
  const { cell, locks } = setup();
  const a = await locks.acquire('l', { lease: 1, owner: 'a', waitMs: 60_000 }, undefined, '');
  const b = locks.acquire('l', { lease: 2, owner: 'b', waitMs: 60_000 }, undefined, '');
  const bOutcome = b.then(() => 'granted', (error: { code?: string }) => error.code);
  await settle();
  const c = locks.acquire('l', { lease: 3, owner: 'c', waitMs: 60_000 }, undefined, '');
  await settle();
  cell.apply({ type: 'leaseRevoke', id: 2 }); // b's lease expires while it waits
  assert.equal(await bOutcome, 'lease_not_found');
  const state = await locks.state('l', '');
  assert.deepEqual(state.queue.map((entry) => entry.owner), ['c'], 'c now waits directly behind a');
  await locks.release('l', a.key, undefined, '');
  const granted = await c;
  assert.equal(granted.owner, 'c');
});

test('when the wait ends, the waiter withdraws and hears lock_held naming the holder; try-lock writes nothing', async () => {
  const { clock, counts, locks, cell } = setup();
  await locks.acquire('l', { lease: 1, owner: 'a', waitMs: 0 }, undefined, '');
  const revision = cell.store.revision;
  await assert.rejects(locks.acquire('l', { lease: 2, owner: 'b', waitMs: 0 }, undefined, ''), (error: { code?: string; details?: { holder?: { owner?: string } } }) =>
    error.code === 'lock_held' && error.details?.holder?.owner === 'a');
  assert.equal(cell.store.revision, revision, 'try-lock wrote nothing');
  const waiting = locks.acquire('l', { lease: 2, owner: 'b', waitMs: 1_000 }, undefined, '').then(() => 'granted', (e: { code?: string }) => e.code);
  await settle();
  assert.equal((await locks.state('l', '')).queue.length, 1);
  await clock.advance(1_000);
  assert.equal(await waiting, 'lock_held');
  assert.deepEqual(counts.gaveUp, ['deadline']);
  assert.equal((await locks.state('l', '')).queue.length, 0, 'nobody waits behind a ghost');
});

test('an abandoned waiter withdraws; a grant to a caller that went away is given back', async () => {
  const { locks } = setup();
  const a = await locks.acquire('l', { lease: 1, owner: 'a', waitMs: 0 }, undefined, '');
  const abandon = new AbortController();
  const gone = locks.acquire('l', { lease: 2, owner: 'b', waitMs: 60_000, signal: abandon.signal }, undefined, '').catch((e: Error) => e);
  await settle();
  abandon.abort(new Error('went away'));
  assert.equal(((await gone) as Error).message, 'went away');
  assert.equal((await locks.state('l', '')).queue.length, 0);
  const late = new AbortController();
  late.abort(new Error('already gone'));
  await locks.release('l', a.key, undefined, '');
  await assert.rejects(locks.acquire('l', { lease: 3, owner: 'c', waitMs: 0, signal: late.signal }, undefined, ''), /already gone/);
  assert.equal((await locks.state('l', '')).holder, null);
});

test('the fencing check names the current token', async () => {
  const { locks } = setup();
  const a = await locks.acquire('l', { lease: 1, owner: 'a', waitMs: 0 }, undefined, '');
  assert.deepEqual(await locks.check('l', a.fencingToken, '').then((r) => [r.valid, r.currentToken]), [true, a.fencingToken]);
  await locks.release('l', a.key, undefined, '');
  const b = await locks.acquire('l', { lease: 2, owner: 'b', waitMs: 0 }, undefined, '');
  const stale = await locks.check('l', a.fencingToken, '');
  assert.deepEqual([stale.valid, stale.currentToken, stale.holder?.owner], [false, b.fencingToken, 'b']);
});

test('a wait that ends is answered within the grace when nothing commits: timeout, and nothing proposed after', async () => {
  const { cell, clock, locks } = setup((c) => new DroppingCell(c, 5_000));
  const dropping = cell as DroppingCell;
  await locks.acquire('l', { lease: 1, owner: 'a', waitMs: 0 }, undefined, '');
  const outcome: string[] = [];
  void locks.acquire('l', { lease: 2, owner: 'b', waitMs: 1_000 }, undefined, '').then(() => outcome.push('granted'), (e: { code?: string }) => outcome.push(e.code ?? String(e)));
  await settle();
  dropping.dropping = true; // from now on the last look and the withdrawal never commit
  await clock.advance(1_000);
  assert.deepEqual(outcome, []);
  await clock.advance(answerGraceMs);
  assert.deepEqual(outcome, ['timeout'], 'answered by the end of the wait plus the grace');
  const proposed = dropping.dropped;
  await clock.advance(60_000);
  assert.equal(dropping.dropped, proposed, 'no withdrawal after the answer (it could race the retry)');
  dropping.dropping = false;
  assert.equal((await locks.state('l', '')).queue.length, 1, 'the entry waits for the retry with the Request-ID');
});

test('a committed check that hangs past the deadline ends the wait on time', async () => {
  const { cell, clock, locks } = setup((c) => new DroppingCell(c, 5_000));
  const dropping = cell as DroppingCell;
  await locks.acquire('l', { lease: 1, owner: 'a', waitMs: 0 }, undefined, '');
  void locks.acquire('l', { lease: 2, owner: 'x', waitMs: 60_000 }, undefined, '').catch(() => undefined);
  await settle();
  const outcome: string[] = [];
  void locks.acquire('l', { lease: 3, owner: 'b', waitMs: 1_000 }, undefined, '').then(() => outcome.push('granted'), (e: { code?: string }) => outcome.push(e.code ?? String(e)));
  await settle();
  dropping.dropping = true;
  await clock.advance(900);
  cell.apply({ type: 'leaseRevoke', id: 2 }); // x goes: b wakes, a is still ahead, so b checks
  await settle();
  await clock.advance(100 + answerGraceMs);
  assert.deepEqual(outcome, ['timeout']);
});

/** A cell that parks every delete-in-a-txn (a withdrawal) until `release()`: still on its way to the log. */
class ParkingCell extends InProcessCell {
  parking = false;
  readonly parked: (() => void)[] = [];
  constructor(private readonly clock: ManualClock, private readonly requestTimeoutMs: number) {
    super();
  }

  override async propose<C extends Command>(op: C, requestId?: string): Promise<Proposed<C>> {
    const withdrawal = op.type === 'txn' && op.success.some((step) => step.type === 'delete');
    if (!this.parking || !withdrawal) return super.propose(op, requestId);
    // It commits later, whatever its proposer heard (a timeout at the request timeout).
    this.parked.push(() => void this.applyWithId(op, requestId));
    return new Promise((_, reject) => {
      this.clock.after(this.requestTimeoutMs, () => reject(new TimeoutError('the outcome is unknown')));
    });
  }

  release(): void {
    for (const apply of this.parked.splice(0)) apply();
  }
}

test('a withdrawal still on its way when a same-Request-ID retry is granted does not delete the grant', async () => {
  const { cell, clock, locks } = setup((c) => new ParkingCell(c, 5_000));
  const parking = cell as ParkingCell;
  const a = await locks.acquire('l', { lease: 1, owner: 'a', waitMs: 0 }, undefined, '');
  // b waits 1 s behind a; its wait ends, and its withdrawal does not commit in time: `timeout`.
  parking.parking = true;
  const first = locks.acquire('l', { lease: 2, owner: 'b', waitMs: 1_000 }, 'req-b', '').then(
    () => 'granted', (error: Error) => error.name);
  await settle();
  await clock.advance(1_000 + answerGraceMs + 10);
  assert.equal(await first, 'TimeoutError');
  // a lets go; b retries with the same Request-ID and is granted its queued entry...
  await locks.release('l', a.key, undefined, '');
  const retried = await locks.acquire('l', { lease: 2, owner: 'b', waitMs: 1_000 }, 'req-b', '');
  assert.ok(retried.fencingToken > a.fencingToken);
  // ...and then the first attempt's withdrawal reaches the log: it must not delete that grant.
  parking.release();
  const state = await locks.state('l', '');
  assert.equal(state.holder?.key, retried.key, 'the retry still holds the lock it was granted');
  assert.equal(state.holder?.fencingToken, retried.fencingToken, 'same entry, same token');
});

/** A member far behind its leader: once `lagMs` is set, each proposal and read completes that much later. */
class LaggingCell extends ParkingCell {
  lagMs = 0;
  constructor(private readonly lagClock: ManualClock, requestTimeoutMs: number) {
    super(lagClock, requestTimeoutMs);
  }

  private lag(): Promise<void> {
    return this.lagMs === 0 ? Promise.resolve() : new Promise((resolve) => this.lagClock.after(this.lagMs, resolve));
  }

  override async propose<C extends Command>(op: C, requestId?: string): Promise<Proposed<C>> {
    await this.lag();
    return super.propose(op, requestId);
  }

  override async linearizableRange(request: RangeRequest) {
    await this.lag();
    return super.linearizableRange(request);
  }
}

test('a retried request\'s recheck is answered within one request timeout on a member far behind: timeout, then a retry gets it', async () => {
  // Sim seed 288: the retry's create, reclaim and check each waited for a lagging member's apply,
  // each under the request timeout, and the try-lock was answered 5.3 s after it was sent.
  const { cell, clock, locks } = setup((c) => new LaggingCell(c, 5_000));
  const lagging = cell as LaggingCell;
  const a = await locks.acquire('l', { lease: 1, owner: 'a', waitMs: 0 }, undefined, '');
  // b's first attempt queues behind a and cannot confirm its withdrawal: the entry stays queued.
  lagging.parking = true;
  const first = locks.acquire('l', { lease: 2, owner: 'b', waitMs: 1_000 }, 'req-b', '').then(() => 'granted', (e: Error) => e.name);
  await settle();
  await clock.advance(1_000 + answerGraceMs + 10);
  assert.equal(await first, 'TimeoutError');
  lagging.parking = false;
  await clock.advance(10_000);
  await locks.release('l', a.key, undefined, '');
  // The retry reaches a member where every step takes 4 s: create 4 s, then reclaim and check 8 s.
  lagging.lagMs = 4_000;
  const sentAt = clock.now;
  const outcome: { what: string; at: number }[] = [];
  void locks.acquire('l', { lease: 2, owner: 'b', waitMs: 0 }, 'req-b', '').then(
    () => outcome.push({ what: 'granted', at: clock.now }), (e: { code?: string }) => outcome.push({ what: e.code ?? String(e), at: clock.now }));
  await clock.advance(4_000 + 5_000);
  assert.deepEqual(outcome.map((o) => o.what), ['timeout'], 'the recheck is answered by its bound, outcome unknown');
  assert.ok((outcome[0] as { at: number }).at - sentAt <= 9_000, `answered ${(outcome[0] as { at: number }).at - sentAt} ms after it was sent`);
  // The member catches up; the next retry with the Request-ID is granted the queued entry.
  lagging.lagMs = 0;
  await clock.advance(10_000);
  const granted = await locks.acquire('l', { lease: 2, owner: 'b', waitMs: 0 }, 'req-b', '');
  assert.ok(granted.fencingToken > a.fencingToken);
  assert.equal((await locks.state('l', '')).holder?.key, granted.key);
});

test('an attempt still waiting after its client retried may leave the queue, the retry then hears lock_held', async () => {
  const { cell, clock, locks } = setup();
  const a = await locks.acquire('l', { lease: 1, owner: 'a', waitMs: 0 }, undefined, '');
  const x = locks.acquire('l', { lease: 3, owner: 'x', waitMs: 60_000 }, undefined, '').catch((e: Error) => e.name);
  await settle();
  // b's first attempt waits 1 s behind a and x; its client gives up on it and retries (same id).
  const first = locks.acquire('l', { lease: 2, owner: 'b', waitMs: 1_000 }, 'req-b', '').then(() => 'granted', (e: Error) => e.name);
  await settle();
  const retry = locks.acquire('l', { lease: 2, owner: 'b', waitMs: 60_000 }, 'req-b', '').then(() => 'granted', (e: Error) => e.name);
  await settle();
  const queue = cell.store.range({ type: 'get', key: '/locks/l/', prefix: true }).kvs;
  const xKey = queue.find((kv) => kv.lease === 3)?.key;
  assert.ok(xKey !== undefined, JSON.stringify(queue.map((kv) => kv.key)));
  cell.apply({ type: 'delete', key: xKey });
  await settle();
  assert.equal(await x, 'LockNotHeldError');
  // The first attempt's wait ends while a still holds: it leaves, taking the shared entry with it
  // (it cannot know its client moved on); the retry sees its entry gone and answers lock_held, so
  // the client starts afresh. Nobody is granted beside a.
  await clock.advance(1_000 + answerGraceMs + 10);
  assert.equal(await first, 'LockHeldError');
  assert.equal(await retry, 'LockHeldError');
  const state = await locks.state('l', '');
  assert.deepEqual([state.holder?.key, state.queue.length], [a.key, 0], "a holds; nobody waits");
});

test('a retry whose caller went away never gives back the grant another attempt of its request answered', async () => {
  // Swarm lock seed 1098: three attempts of one request shared the entry; the second one's reclaim
  // moved its modRevision, the third (the one its client listened to) was granted, and then the
  // second, granted too but to a caller gone, withdrew the entry by that modRevision: the next
  // waiter was granted beside the third.
  const { cell, locks } = setup();
  const a = await locks.acquire('l', { lease: 1, owner: 'a', waitMs: 0 }, undefined, '');
  const gone1 = new AbortController();
  const gone2 = new AbortController();
  const b1 = locks.acquire('l', { lease: 2, owner: 'b', waitMs: 60_000, signal: gone1.signal }, 'req-b', '').catch((e: Error) => e.message);
  await settle();
  const b2 = locks.acquire('l', { lease: 2, owner: 'b', waitMs: 60_000, signal: gone2.signal }, 'req-b', '').catch((e: Error) => e.message);
  await settle();
  const b3 = locks.acquire('l', { lease: 2, owner: 'b', waitMs: 60_000 }, 'req-b', '');
  await settle();
  const c = locks.acquire('l', { lease: 3, owner: 'c', waitMs: 60_000 }, undefined, '').then((grant) => grant.fencingToken, (e: Error) => e.name);
  await settle();
  // a lets go; the first two attempts' callers are found gone just as they are granted.
  cell.afterNextApply = () => {
    gone1.abort(new Error('went away'));
    gone2.abort(new Error('went away'));
  };
  await locks.release('l', a.key, undefined, '');
  const granted = await b3;
  await settle();
  assert.deepEqual([await b1, await b2], ['went away', 'went away']);
  const state = await locks.state('l', '');
  assert.equal(state.holder?.key, granted.key, 'the grant b3 answered still holds the lock');
  assert.equal(state.holder?.fencingToken, granted.fencingToken);
  const cNow = await Promise.race([c, settle().then(() => 'waiting')]);
  assert.equal(cNow, 'waiting', 'c is not granted beside b');
});

test('a withdrawal on its way when the entry comes to own the lock deletes nothing', async () => {
  // A retry reclaimed the entry last and then waited out a short deadline (its client had moved
  // on to a later attempt): its withdrawal, by the modRevision it holds, is still on its way when
  // the one ahead lets go and the later attempt is granted. Comparing the entry ahead spares it.
  const { cell, clock, locks } = setup((c) => new ParkingCell(c, 5_000));
  const parking = cell as ParkingCell;
  const a = await locks.acquire('l', { lease: 1, owner: 'a', waitMs: 0 }, undefined, '');
  const live = locks.acquire('l', { lease: 2, owner: 'b', waitMs: 60_000 }, 'req-b', '');
  await settle();
  parking.parking = true;
  const stale = locks.acquire('l', { lease: 2, owner: 'b', waitMs: 1_000 }, 'req-b', '').then(() => 'granted', (e: Error) => e.name);
  await settle();
  await clock.advance(1_000);
  assert.equal(parking.parked.length, 1, 'the stale attempt\'s withdrawal is on its way');
  parking.parking = false;
  await locks.release('l', a.key, undefined, '');
  const granted = await live;
  parking.release();
  await clock.advance(answerGraceMs + 10);
  assert.equal(await stale, 'TimeoutError');
  const state = await locks.state('l', '');
  assert.equal(state.holder?.key, granted.key, 'the granted entry is still there');
});

test('stop() ends every retrying withdrawal at once: no retry timer outlives a stopped node', async () => {
  const clock = new ManualClock();
  const cell = new InProcessCell();
  const metrics: QueueMetrics = { wakeup: () => {}, granted: () => {}, gaveUp: () => {}, waiting: () => {} };
  const contender = new QueueContender(cell, cell.feed, clock, metrics, { requestTimeoutMs: 5_000 });
  cell.apply({ type: 'leaseGrant', ttlMs: 10_000, id: 1 });
  const created = cell.apply({ type: 'seqCreate', prefix: '/locks/l/', value: new Uint8Array(0), lease: 1, ifEmpty: false });
  assert.ok(created.type === 'seqCreate');
  // The node is stopping: every proposal fails with a retryable error from now on.
  let proposals = 0;
  cell.propose = async () => {
    proposals++;
    throw new UnavailableError('the node is stopping');
  };
  const withdrawal = contender.withdraw(created.kv, 20);
  const outcome: { error: Error | null } = { error: null };
  withdrawal.catch((error: Error) => { outcome.error = error; });
  await settle();
  assert.equal(proposals, 1);
  assert.equal(outcome.error, null, 'it would retry (after 100 ms, 200 ms, ...)');
  contender.stop();
  await settle();
  assert.ok((outcome.error as Error | null) instanceof UnavailableError, 'the withdrawal gave up with its last error');
  assert.equal(proposals, 1, 'no attempt after stop()');
});

test('a move\'s fence ends the waits of that lock at once with wrong_cell naming the entry, left to move; other locks wait on', async () => {
  const { cell, clock, counts, locks } = setup();
  await locks.acquire('l', { lease: 1, owner: 'a', waitMs: 0 }, undefined, '');
  await locks.acquire('m', { lease: 1, owner: 'a', waitMs: 0 }, undefined, '');
  const outcomes: string[] = [];
  const waiter = (name: string, lease: number) => locks.acquire(name, { lease, owner: name, waitMs: 60_000 }, undefined, '').then(
    () => outcomes.push(`${name} granted`),
    (error: { code?: string; details?: Record<string, unknown> }) => outcomes.push(`${name} ${error.code} ${String(error.details?.['entry']).startsWith('/locks/l/')}`));
  const l = waiter('l', 2);
  void waiter('m', 3);
  await settle();
  assert.equal(counts.waiting, 2);
  const fenced = {
    epoch: 2, cell: 'cell-1',
    namespaces: [{ prefix: '/', cell: 'cell-1', epoch: 1 }, { prefix: '/locks/l/', cell: 'cell-1', epoch: 1, fencedTo: 'cell-2' }],
    cells: [{ id: 'cell-1', endpoints: ['http://a:1'] }, { id: 'cell-2', endpoints: ['http://b:1'] }],
  };
  cell.apply({ type: 'ownershipSet', record: new TextEncoder().encode(JSON.stringify(fenced)) });
  cell.feed.onOwnershipChanged((prefix) => cell.store.refuseCommand({ type: 'delete', key: prefix, prefix: true }) !== null);
  await l;
  assert.deepEqual(outcomes, ['l wrong_cell true'], 'ended at the fence, not at its deadline, naming its entry');
  assert.equal(clock.now, 0);
  assert.equal(cell.store.range({ type: 'get', key: '/locks/l/', prefix: true }).count, 2, 'its entry stays: it moves with the namespace');
  assert.equal(counts.waiting, 1, 'the waiter of the other lock waits on');
});
