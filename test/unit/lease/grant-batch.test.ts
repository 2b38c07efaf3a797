// Many grants in one log entry (leaseGrantBatch, op 19; issue 31): ids assigned at apply in order
// and alike on every replica (also after a snapshot install), all or none (quota, taken ids, the
// batch limit), a retried Request-ID answered with the first grants and granting nothing twice;
// and the lease service proposing it only where the store format says every member applies it,
// one entry per grant otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EntryType } from '../../../src/raft/types.js';
import { AccessGuard } from '../../../src/auth/index.js';
import { LeaseService, type LeaseDriver } from '../../../src/lease/lease-service.js';
import { defaultLeaseServiceOptions } from '../../../src/lease/lease-config.js';
import { HttpLeaseForwarder } from '../../../src/lease/forward/http-forwarder.js';
import { TooLargeError } from '../../../src/base/errors.js';
import { leaseGrantBatchMax } from '../../../src/base/limits.js';
import {
  MemoryEngine,
  MvccStore,
  decodeCommand,
  defaultMvccLimits,
  encodeCommand,
} from '../../../src/mvcc/index.js';
import { encodeCommandUnchecked } from '../../../src/mvcc/command-codec.js';
import type { ApplyOutcome, Command, CommandProposer, MvccLimits, Proposed } from '../../../src/mvcc/index.js';
import { projectRoot } from '../project-root.js';

const limits: MvccLimits = { ...defaultMvccLimits, leasesMax: 10 };

class Replica {
  index = 0;
  constructor(readonly store: MvccStore = new MvccStore(new MemoryEngine(), limits)) {}
  apply(op: Command, requestId?: string): ApplyOutcome {
    const data = encodeCommand({ proposedAtMs: 1_700_000_000_000, op, ...(requestId === undefined ? {} : { requestId }) }, limits);
    return this.applyData(data);
  }
  applyData(data: Uint8Array): ApplyOutcome {
    const [outcome] = this.store.applyBatch([{ index: ++this.index, term: 1, type: EntryType.normal, data }]);
    assert.ok(outcome !== undefined);
    return outcome;
  }
}

const batch = (...grants: { ttlMs: number; id?: number }[]): Command => ({ type: 'leaseGrantBatch', grants });
const ids = (outcome: ApplyOutcome): number[] => {
  assert.ok(outcome.type === 'applied' && outcome.result.type === 'leaseGrantBatch', JSON.stringify(outcome));
  return outcome.result.leases.map((lease) => lease.id);
};
const failedWith = (outcome: ApplyOutcome): string => {
  assert.equal(outcome.type, 'failed', JSON.stringify(outcome));
  return (outcome as { error: { code: string } }).error.code;
};

test('the codec round-trips a batch; past the limit it is refused with too_large', () => {
  const op = batch({ ttlMs: 5_000 }, { ttlMs: 6_000, id: 42 });
  const decoded = decodeCommand(encodeCommand({ proposedAtMs: 1, op }, limits), limits);
  assert.deepEqual(decoded.op, op);
  const over = batch(...Array.from({ length: leaseGrantBatchMax + 1 }, () => ({ ttlMs: 5_000 })));
  assert.throws(() => encodeCommand({ proposedAtMs: 1, op: over }, limits), TooLargeError);
  // A leader with other limits could have proposed it: apply refuses it and changes nothing.
  const replica = new Replica(new MvccStore(new MemoryEngine(), { ...limits, leasesMax: 10_000 }));
  assert.equal(failedWith(replica.applyData(encodeCommandUnchecked({ proposedAtMs: 1, op: over }))), 'too_large');
  assert.equal(replica.store.leases().length, 0);
});

test('ids are assigned at apply, in order, skipping taken and named ids, alike on every replica', () => {
  const a = new Replica();
  const b = new Replica();
  const ops: Command[] = [
    { type: 'leaseGrant', ttlMs: 5_000, id: 2 },
    batch({ ttlMs: 5_000 }, { ttlMs: 7_000, id: 3 }, { ttlMs: 5_000 }, { ttlMs: 9_000 }),
  ];
  const outcomes = ops.map((op) => [a.apply(op), b.apply(op)]);
  const [fromA, fromB] = outcomes[1] ?? [];
  assert.ok(fromA !== undefined && fromB !== undefined);
  assert.deepEqual(ids(fromA), [4, 3, 5, 6], 'from the counter (past 2, the highest granted), skipping 3 named by the batch');
  assert.deepEqual(ids(fromB), ids(fromA));
  assert.equal(a.store.hash(), b.store.hash());
  assert.deepEqual(a.store.leases().map((l) => [l.id, l.ttlMs]), [[2, 5_000], [3, 7_000], [4, 5_000], [5, 5_000], [6, 9_000]]);
  // The counter moved past the batch: the next single grant takes 7.
  const next = a.apply({ type: 'leaseGrant', ttlMs: 5_000 });
  assert.ok(next.type === 'applied' && next.result.type === 'leaseGrant' && next.result.id === 7);
});

test('assigned ids skip leases the table holds at or above the counter (a store from before the counter passed every id)', () => {
  // Only a store written by older code can hold such a lease; write one the way it was stored
  // ('g' + u64 id -> ttl, remaining, key count) and check the batch's single range read skips it
  // as one read per id would.
  const engine = new MemoryEngine();
  const replica = new Replica(new MvccStore(engine, { ...limits, leasesMax: 100 }));
  const record = (ttlMs: number): Uint8Array => {
    const out = new Uint8Array(20);
    new DataView(out.buffer).setBigUint64(0, BigInt(ttlMs));
    new DataView(out.buffer).setBigUint64(8, BigInt(ttlMs));
    return out;
  };
  const key = (id: number): Uint8Array => {
    const out = new Uint8Array(9);
    out[0] = 0x67;
    new DataView(out.buffer).setBigUint64(1, BigInt(id));
    return out;
  };
  engine.write((writer) => {
    for (const id of [2, 3, 6]) writer.put(key(id), record(5_000));
  });
  assert.deepEqual(ids(replica.apply(batch({ ttlMs: 5_000 }, { ttlMs: 5_000 }, { ttlMs: 5_000 }, { ttlMs: 5_000 }))), [1, 4, 5, 7]);
  const single = replica.apply({ type: 'leaseGrant', ttlMs: 5_000 });
  assert.ok(single.type === 'applied' && single.result.type === 'leaseGrant' && single.result.id === 8);
});

test('all or none: a taken id, the lease quota or a bad TTL refuses the whole batch and changes nothing', () => {
  const replica = new Replica();
  ids(replica.apply(batch({ ttlMs: 5_000 }, { ttlMs: 5_000 })));
  const before = JSON.stringify(replica.store.leases());
  assert.equal(failedWith(replica.apply(batch({ ttlMs: 5_000 }, { ttlMs: 5_000, id: 2 }))), 'invalid_argument');
  assert.equal(failedWith(replica.apply(batch(...Array.from({ length: 9 }, () => ({ ttlMs: 5_000 }))))), 'quota_exceeded');
  // A TTL out of bounds (encoded unchecked: a leader with other limits could have proposed it).
  const badTtl = encodeCommandUnchecked({ proposedAtMs: 1, op: batch({ ttlMs: 5_000 }, { ttlMs: 10 }) });
  assert.equal(failedWith(replica.applyData(badTtl)), 'invalid_argument');
  assert.equal(JSON.stringify(replica.store.leases()), before);
  assert.deepEqual(ids(replica.apply(batch(...Array.from({ length: 8 }, () => ({ ttlMs: 5_000 }))))), [3, 4, 5, 6, 7, 8, 9, 10]);
});

test('a retried Request-ID gets the first grants again and grants nothing twice', () => {
  const replica = new Replica();
  const first = replica.apply(batch({ ttlMs: 5_000 }, { ttlMs: 5_000 }, { ttlMs: 6_000 }), 'sessions-1');
  const again = replica.apply(batch({ ttlMs: 5_000 }, { ttlMs: 5_000 }, { ttlMs: 6_000 }), 'sessions-1');
  assert.deepEqual(ids(again), ids(first));
  assert.ok(again.type === 'applied' && again.duplicate);
  assert.deepEqual(again.type === 'applied' ? again.result : null, first.type === 'applied' ? first.result : null);
  assert.equal(replica.store.leases().length, 3);
});

test('a batch after a snapshot install gets the ids the snapshot\'s source gets', () => {
  const source = new Replica();
  ids(source.apply(batch({ ttlMs: 5_000 }, { ttlMs: 5_000, id: 7 })));
  source.apply({ type: 'leaseRevoke', id: 1 });
  const installed = new Replica();
  installed.store.restore(source.store.snapshot().chunks);
  installed.index = source.index;
  const op = batch({ ttlMs: 5_000 }, { ttlMs: 5_000 }, { ttlMs: 5_000 });
  const fromSource = ids(source.apply(op));
  assert.deepEqual(ids(installed.apply(op)), fromSource);
  assert.deepEqual(fromSource, [8, 9, 10], 'after the highest id ever granted, never a revoked one');
  assert.equal(installed.store.hash(), source.store.hash());
});

// --- the lease service: one entry when the store format allows, one per grant otherwise -----

/** Proposes by applying to a real store at once (one entry per proposal), recording each op. */
function serviceOver(store: MvccStore): { service: LeaseService; proposed: Command['type'][] } {
  const proposed: Command['type'][] = [];
  let index = store.appliedIndex;
  const proposer: CommandProposer = {
    propose<C extends Command>(op: C, requestId: string | undefined): Promise<Proposed<C>> {
      proposed.push(op.type);
      const data = encodeCommand({ proposedAtMs: 1_700_000_000_000, op, ...(requestId === undefined ? {} : { requestId }) }, store.limits);
      const [outcome] = store.applyBatch([{ index: ++index, term: store.appliedTerm || 1, type: EntryType.normal, data }]);
      if (outcome?.type === 'failed') return Promise.reject(outcome.error);
      assert.ok(outcome?.type === 'applied');
      return Promise.resolve({ result: outcome.result, duplicate: outcome.duplicate } as Proposed<C>);
    },
  };
  const driver: LeaseDriver = { isLeader: true, leaderId: 1, status: () => ({ term: 1 }), linearizableRead: () => Promise.resolve() };
  const timers = { setTimeout: () => ({ cancel: () => undefined }), monotonicMs: () => 0 };
  const guard = new AccessGuard({ policyRecord: () => ({ version: 0, record: null }), keysOfLease: () => [] });
  const service = new LeaseService({ memberId: 1, store, timers, driver, proposer, forwarder: new HttpLeaseForwarder([]), guard }, defaultLeaseServiceOptions);
  return { service, proposed };
}

test('grantMany: one leaseGrantBatch entry in a new store (format 5, above 3), with per-lease answers', async () => {
  const store = new MvccStore(new MemoryEngine(), limits);
  assert.equal(store.storeFormat, 5);
  const { service, proposed } = serviceOver(store);
  const answer = await service.grantMany({ ttlMs: 5_000, count: 4 }, 'b-1', '');
  assert.deepEqual(proposed, ['leaseGrantBatch']);
  assert.deepEqual(answer.leases, [1, 2, 3, 4].map((id) => ({ id, ttl: 5 })));
  const refused = await service.grantMany({ ttlMs: 5_000, count: 7 }, 'b-2', '');
  assert.equal(refused.leases.length, 7);
  assert.ok(refused.leases.every((item) => 'error' in item && item.error === 'quota_exceeded'), 'every grant answers the refusal');
  assert.equal(store.leases().length, 4, 'all or none');
  service.stop();
});

test('grantMany: a store in an older format (its cell may hold older members) proposes one grant per lease', async () => {
  // The store the code before format 2 wrote (test/fixtures/mvcc-format1), restored.
  const fixture = JSON.parse(readFileSync(join(projectRoot(import.meta.url, 'package.json'), 'test/fixtures/mvcc-format1/fixture.json'), 'utf8')) as {
    limits: MvccLimits;
    snapshotEarly: string;
  };
  const store = new MvccStore(new MemoryEngine(), { ...fixture.limits, leaseGrantBatchMax: leaseGrantBatchMax });
  store.restore([new Uint8Array(Buffer.from(fixture.snapshotEarly, 'base64'))]);
  assert.equal(store.storeFormat, 1);
  const before = store.leases().length;
  const { service, proposed } = serviceOver(store);
  const answer = await service.grantMany({ ttlMs: 5_000, count: 3 }, 'old-1', '');
  assert.deepEqual(proposed, ['leaseGrant', 'leaseGrant', 'leaseGrant']);
  assert.equal(answer.leases.filter((item) => 'id' in item).length, 3);
  assert.equal(store.leases().length, before + 3);
  service.stop();
});
