// Many expiries in one log entry (leaseRevokeBatch, op 21; issue 31). At apply: each lease still
// present is revoked as leaseRevoke revokes it (its keys at a revision of its own), one already
// gone is skipped, so the state is the same as one entry per lease; below store format 4 the
// entry is refused and changes nothing (as older builds refuse code 21). In the lease service:
// a format-4 store's expiry goes in entries bounded in leases and keys with a bounded number in
// flight, a lease renewed before the tick is not named, a lease named is refused renewal until
// its entry commits or is retried (and called gone only once its entry applied: until then the
// renewal waits, or is unavailable when the entry was lost), and an older store keeps one entry
// per lease.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntryType } from '../../../src/raft/types.js';
import { AccessGuard } from '../../../src/auth/index.js';
import { LeaseService, type LeaseDriver } from '../../../src/lease/lease-service.js';
import { defaultLeaseServiceOptions, defaultRevokeBatchOptions, type LeaseServiceOptions } from '../../../src/lease/lease-config.js';
import { HttpLeaseForwarder } from '../../../src/lease/forward/http-forwarder.js';
import { InvalidArgumentError, TooLargeError, UnavailableError } from '../../../src/base/errors.js';
import { leaseRevokeBatchMax } from '../../../src/base/limits.js';
import { MemoryEngine, MvccStore, decodeCommand, defaultMvccLimits, encodeCommand, cellWork } from '../../../src/mvcc/index.js';
import { WatchHub, defaultWatchLimits, type WatchOutput } from '../../../src/watch/index.js';
import type { ApplyOutcome, Command, CommandProposer, MvccLimits, Proposed } from '../../../src/mvcc/index.js';

const limits: MvccLimits = defaultMvccLimits;

class Replica {
  index = 0;
  readonly store = new MvccStore(new MemoryEngine(), limits);
  apply(op: Command): ApplyOutcome {
    const data = encodeCommand({ proposedAtMs: 1_700_000_000_000, op }, limits);
    const [outcome] = this.store.applyBatch([{ index: ++this.index, term: 1, type: EntryType.normal, data }]);
    assert.ok(outcome !== undefined);
    return outcome;
  }
  /** Leases 1..n, lease i holding i % 3 keys (`/k/<lease>/<j>`). */
  populate(n: number): void {
    for (let id = 1; id <= n; id++) {
      assert.equal(this.apply({ type: 'leaseGrant', ttlMs: 5_000, id }).type, 'applied');
      for (let j = 0; j < id % 3; j++) {
        assert.equal(this.apply({ type: 'put', key: `/k/${id}/${j}`, value: new Uint8Array([id, j]), lease: id }).type, 'applied');
      }
    }
  }
}

test('the codec round-trips a batch; empty, past the limit, a repeated or zero id is refused', () => {
  const op: Command = { type: 'leaseRevokeBatch', ids: [7, 3, 2 ** 40] };
  assert.deepEqual(decodeCommand(encodeCommand({ proposedAtMs: 1, op }, limits), limits).op, op);
  const encode = (ids: number[]): Uint8Array => encodeCommand({ proposedAtMs: 1, op: { type: 'leaseRevokeBatch', ids } }, limits);
  assert.throws(() => encode([]), InvalidArgumentError);
  assert.throws(() => encode(Array.from({ length: leaseRevokeBatchMax + 1 }, (_, i) => i + 1)), TooLargeError);
  assert.throws(() => encode([4, 5, 4]), /named twice/);
  assert.throws(() => encode([0]), InvalidArgumentError);
  assert.equal(encode(Array.from({ length: leaseRevokeBatchMax }, (_, i) => i + 1)).length < 9_000, true, '8 bytes an id');
});

test('a batch leaves the same state as one entry per lease, each lease at its own revision; gone leases are skipped', () => {
  const batched = new Replica();
  const single = new Replica();
  batched.populate(8);
  single.populate(8);
  const start = batched.store.revision;
  // Lease 5 was revoked by its client before the expiry entry applied; 99 never existed.
  for (const replica of [batched, single]) assert.equal(replica.apply({ type: 'leaseRevoke', id: 5 }).type, 'applied');
  const outcome = batched.apply({ type: 'leaseRevokeBatch', ids: [1, 2, 3, 5, 99, 4] });
  assert.ok(outcome.type === 'applied' && outcome.result.type === 'leaseRevokeBatch', JSON.stringify(outcome));
  // Lease 5 took a revision (its 2 keys); then 1 (1 key), 2 (2 keys), 3 (no keys: no revision), 4 (1 key).
  assert.deepEqual(outcome.result.leases, [
    { id: 1, deleted: 1, revision: start + 2 },
    { id: 2, deleted: 2, revision: start + 3 },
    { id: 3, deleted: 0, revision: start + 3 },
    { id: 4, deleted: 1, revision: start + 4 },
  ]);
  assert.equal(outcome.result.revision, start + 4);
  for (const id of [1, 2, 3, 4]) assert.equal(single.apply({ type: 'leaseRevoke', id }).type, 'applied');
  assert.equal(batched.store.revision, single.store.revision);
  assert.equal(batched.store.hash(), single.store.hash(), 'the same keys, leases and history');
  assert.deepEqual(batched.store.events({ startRevision: start + 1, limit: 100 }), single.store.events({ startRevision: start + 1, limit: 100 }));
  assert.deepEqual(batched.store.leases().map((l) => l.id), [6, 7, 8]);
  assert.equal(batched.store.range({ type: 'get', key: '/k/', prefix: true }).kvs.length, 0 + 1 + 2, 'leases 6, 7 and 8 keep their keys');
});

test('below store format 4 the entry is refused and changes nothing (older builds refuse code 21)', () => {
  const replica = new Replica();
  replica.populate(3);
  // A format-3 store: as a cell made by the previous build has.
  const format3 = new MvccStore(new MemoryEngine(), limits);
  const snapshot = replica.store.snapshot();
  format3.restore(snapshot.chunks);
  (format3 as unknown as { meta: { storeFormat: number } }).meta.storeFormat = 3;
  assert.equal(format3.storeFormat, 3);
  const hash = format3.hash();
  const data = encodeCommand({ proposedAtMs: 1_700_000_000_000, op: { type: 'leaseRevokeBatch', ids: [1, 2] } }, limits);
  const [outcome] = format3.applyBatch([{ index: format3.appliedIndex + 1, term: 2, type: EntryType.normal, data }]);
  assert.ok(outcome?.type === 'failed' && outcome.error.code === 'invalid_argument', JSON.stringify(outcome));
  assert.equal(format3.hash(), hash);
  assert.equal(format3.leases().length, 3);
});

// --- the lease service ----------------------------------------------------------------------

interface Harness {
  readonly service: LeaseService;
  readonly proposed: Command[];
  /** Commits (applies) the oldest pending proposal, or fails it. */
  settle(ok?: boolean): Promise<void>;
  /** Commits every pending proposal in one applied batch (a member applying them together). */
  settleAll(): Promise<number>;
  /** Told after each applied batch (a watch hub's onApplied). */
  onBatch: () => void;
  readonly clock: { now: number };
}

/** A leader over a real store; proposals wait until settle() applies (or loses) them in order. */
function harness(store: MvccStore, options: LeaseServiceOptions): Harness {
  const proposed: Command[] = [];
  const pending: { op: Command; resolve: (p: Proposed<Command>) => void; reject: (e: Error) => void }[] = [];
  let index = store.appliedIndex;
  const clock = { now: 0 };
  const applyAll = (ops: readonly Command[]): ApplyOutcome[] => {
    const entries = ops.map((op) => ({ index: ++index, term: 1, type: EntryType.normal, data: encodeCommand({ proposedAtMs: 1_700_000_000_000, op }, store.limits) }));
    const outcomes = store.applyBatch(entries);
    service.onApplied(entries, outcomes);
    h.onBatch();
    for (const outcome of outcomes) assert.ok(outcome.type === 'applied', JSON.stringify(outcome));
    return outcomes;
  };
  const applyNow = (op: Command): ApplyOutcome => applyAll([op])[0] as ApplyOutcome;
  const proposer: CommandProposer = {
    propose<C extends Command>(op: C): Promise<Proposed<C>> {
      // Checkpoints commit at once; revocations wait for settle().
      if (op.type !== 'leaseRevoke' && op.type !== 'leaseRevokeBatch') {
        const outcome = applyNow(op);
        return Promise.resolve({ result: (outcome as { result: unknown }).result, duplicate: false } as Proposed<C>);
      }
      proposed.push(op);
      return new Promise((resolve, reject) => pending.push({ op, resolve: resolve as unknown as (p: Proposed<Command>) => void, reject }));
    },
  };
  const driver: LeaseDriver = { isLeader: true, leaderId: 1, status: () => ({ term: 1 }), linearizableRead: () => Promise.resolve() };
  const timers = { setTimeout: () => ({ cancel: () => undefined }), monotonicMs: () => clock.now };
  const guard = new AccessGuard({ policyRecord: () => ({ version: 0, record: null }), keysOfLease: () => [] });
  const service = new LeaseService({ memberId: 1, store, timers, driver, proposer, forwarder: new HttpLeaseForwarder([]), guard }, options);
  const settle = async (ok = true): Promise<void> => {
    const next = pending.shift();
    assert.ok(next !== undefined, 'a proposal is pending');
    if (!ok) {
      next.reject(new Error('lost'));
    } else {
      const outcome = applyNow(next.op);
      next.resolve({ result: (outcome as { result: unknown }).result, duplicate: false } as Proposed<Command>);
    }
    await new Promise((resolve) => setImmediate(resolve));
  };
  const settleAll = async (): Promise<number> => {
    const all = pending.splice(0);
    const outcomes = applyAll(all.map((p) => p.op));
    all.forEach((p, i) => p.resolve({ result: (outcomes[i] as { result: unknown }).result, duplicate: false } as Proposed<Command>));
    await new Promise((resolve) => setImmediate(resolve));
    return all.length;
  };
  const h: Harness = { service, proposed, settle, settleAll, clock, onBatch: () => {} };
  return h;
}

/** A promoted leader (term 1 applied) over `leases` leases of TTL 5 s, lease i holding i % 3 keys. */
function leaderOver(leases: number, options: LeaseServiceOptions): Harness & { replica: Replica } {
  const replica = new Replica();
  replica.populate(leases);
  const h = harness(replica.store, options);
  h.service.tick(); // promotes: every lease's deadline is 5 s from now (0)
  assert.equal(h.service.trackedCount, leases);
  return { ...h, replica };
}

const batchOptions = (leasesMax: number, keysMax: number, inFlightMax: number): LeaseServiceOptions =>
  ({ ...defaultLeaseServiceOptions, revokeBatch: { leasesMax, keysMax, inFlightMax } });

test('a format-4 store expires leases in entries bounded in leases and keys, with a bounded number in flight', async () => {
  const h = leaderOver(30, batchOptions(8, 4, 2));
  h.clock.now = 6_000;
  h.service.tick();
  const batches = h.proposed.map((op) => (op.type === 'leaseRevokeBatch' ? op.ids : assert.fail(op.type)));
  const keysOf = (id: number): number => id % 3;
  for (const ids of batches) {
    assert.ok(ids.length <= 8, 'leases per entry');
    assert.ok(ids.reduce((sum, id) => sum + keysOf(id), 0) <= 4, 'keys per entry');
  }
  const named = batches.flat();
  assert.ok(named.length >= 2 && named.length < 30, `a bounded first pass: ${named.length}`);
  assert.ok(batches.length >= 2, 'the key bound split the pass into entries');
  assert.equal(new Set(named).size, named.length, 'no lease twice');
  // Nothing more while the entries are in flight.
  h.service.tick();
  assert.equal(h.proposed.length, batches.length);
  // Commit them: the rest follows over the next ticks, each lease revoked exactly once.
  for (let round = 0; round < 20 && h.replica.store.leases().length > 0; round++) {
    while (h.proposed.length > 0 && (h.service as unknown as { revokeBatchesInFlight: number }).revokeBatchesInFlight > 0) await h.settle();
    h.proposed.length = 0;
    h.clock.now += 100;
    h.service.tick();
  }
  assert.equal(h.replica.store.leases().length, 0);
  assert.equal(h.replica.store.range({ type: 'get', key: '/k/', prefix: true }).kvs.length, 0);
  assert.equal(h.service.expiredTotal, 30);
  assert.equal(h.service.trackedCount, 0);
  h.service.stop();
});

test('a lease renewed before the tick is not named; a named one is refused renewal until its entry commits or is retried', async () => {
  const h = leaderOver(4, batchOptions(100, 100, 2));
  h.clock.now = 4_000;
  const renewed = await h.service.keepalive([2], false, cellWork);
  assert.deepEqual(renewed.leases, [{ id: 2, ttl: 5 }]);
  h.clock.now = 5_500;
  h.service.tick();
  assert.deepEqual(h.proposed, [{ type: 'leaseRevokeBatch', ids: [1, 3, 4] }], 'lease 2 was renewed at 4 s: alive until 9 s');
  // Named (its entry may commit any moment): no renewal is promised for it, and it is not called
  // gone before its entry applied either (its key is still there until then): the answer waits.
  const waiting = h.service.keepalive([1, 2], false, cellWork);
  let answered = false;
  void waiting.then(() => (answered = true), () => (answered = true));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(answered, false, 'no answer while the revocation is in flight');
  // The entry is lost (say, a leader change dropped it): lease 1 and its key are still in the
  // store, so the renewal is unavailable (retry), never lease_not_found (fault run seed 19105).
  await h.settle(false);
  await assert.rejects(waiting, (error: unknown) => error instanceof UnavailableError && /being revoked/.test(error.message));
  assert.notEqual(h.replica.store.lease(1), null);
  h.clock.now += 20; // past the leadership confirmation's interval (its timer never fires here)
  await assert.rejects(h.service.keepalive([1], false, cellWork), UnavailableError, 'pending its retry: unavailable at once');
  // Named again after revokeRetryMs, not before.
  h.service.tick();
  assert.equal(h.proposed.length, 1);
  h.clock.now = 5_500 + defaultLeaseServiceOptions.tracker.revokeRetryMs;
  h.service.tick();
  assert.deepEqual(h.proposed[1], { type: 'leaseRevokeBatch', ids: [1, 3, 4] });
  // A renewal now is answered lease_not_found once the entry applied: the key is gone by then.
  h.clock.now += 20;
  const gone = h.service.keepalive([1], false, cellWork);
  await h.settle();
  assert.deepEqual((await gone).leases, [{ id: 1, error: 'lease_not_found' }]);
  assert.equal(h.replica.store.range({ type: 'get', key: '/k/1/', prefix: true }).kvs.length, 0, 'reported gone: its key is gone');
  assert.deepEqual(h.replica.store.leases().map((l) => l.id), [2], 'only the renewed lease lives');
  h.clock.now += 20;
  assert.deepEqual((await h.service.keepalive([3], false, cellWork)).leases, [{ id: 3, error: 'lease_not_found' }]);
  h.service.stop();
});

test('a store below format 4 keeps one leaseRevoke entry per expired lease', async () => {
  const replica = new Replica();
  replica.populate(3);
  (replica.store as unknown as { meta: { storeFormat: number } }).meta.storeFormat = 3;
  const h = harness(replica.store, batchOptions(100, 100, 2));
  h.service.tick();
  h.clock.now = 6_000;
  h.service.tick();
  assert.deepEqual(h.proposed.map((op) => op.type), ['leaseRevoke', 'leaseRevoke', 'leaseRevoke']);
  h.service.stop();
});

/**
 * A mass expiry under a prefix watch on every session's key (a service registry's watcher), with
 * the watch hub's default buffer: every entry the leader has in flight applied in one batch, the
 * watcher drained after each. Returns the deletions it saw and how it ended, if it did.
 */
async function massExpiryUnderWatch(sessions: number, options: LeaseServiceOptions): Promise<{ seen: number; ended: string | null }> {
  const replica = new Replica();
  for (let id = 1; id <= sessions; id++) {
    replica.apply({ type: 'leaseGrant', ttlMs: 5_000, id });
    replica.apply({ type: 'put', key: `/svc/${id}`, value: new Uint8Array(100), lease: id });
  }
  const hub = new WatchHub<string>(replica.store, defaultWatchLimits);
  const connection = hub.openConnection(() => {}, () => true);
  hub.create(connection, 'registry', { key: '/svc/', prefix: true, startRevision: 0, prevKv: false, filter: 'delete', encoding: 'utf8' });
  let seen = 0;
  let ended: string | null = null;
  const drain = (): void => {
    for (let out: WatchOutput<string> | null = connection.next(); out !== null; out = connection.next()) {
      if (out.type === 'batch') seen += out.batch.events.length;
      else ended = out.reason;
    }
  };
  const h = harness(replica.store, options);
  h.onBatch = () => hub.onApplied();
  h.service.tick();
  h.clock.now = 6_000;
  h.service.tick();
  for (let round = 0; round < 1_000 && replica.store.leases().length > 0 && ended === null; round++) {
    if ((await h.settleAll()) === 0) {
      h.clock.now += 100;
      h.service.tick();
    }
    drain();
  }
  h.service.stop();
  return { seen, ended };
}

test('a mass expiry under a prefix watch on the keys: the watcher sees every deletion and is not ended as a slow consumer', async () => {
  const ok = await massExpiryUnderWatch(3_000, defaultLeaseServiceOptions);
  assert.deepEqual(ok, { seen: 3_000, ended: null });
  // Entries as large as a watcher's whole buffer end it at once (what bench:capacity found).
  const tooLarge = await massExpiryUnderWatch(3_000, { ...defaultLeaseServiceOptions, revokeBatch: { ...defaultRevokeBatchOptions, keysMax: 1_000 } });
  assert.equal(tooLarge.ended, 'slow_consumer');
});
