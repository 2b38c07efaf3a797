// Contender queues (locks, elections) in the state machine: each create names its key after its
// own revision and reads its place in the same step; checks and releases are decided in committed
// steps; a contender whose lease ended is never granted; every failure is remembered for retries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntryType, type Entry } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand, decodeCommand } from '../../../src/mvcc/index.js';
import type { ApplyOutcome, Command, CommandResult } from '../../../src/mvcc/index.js';

const prefix = '/locks/report/';
const value = (text: string): Uint8Array => new TextEncoder().encode(text);

function cell(): { apply(op: Command, requestId?: string): ApplyOutcome; ok(op: Command): CommandResult; store: MvccStore } {
  const store = new MvccStore(new MemoryEngine(), defaultMvccLimits);
  let index = 0;
  const apply = (op: Command, requestId?: string): ApplyOutcome => {
    const data = encodeCommand({ proposedAtMs: 1_000 + index, op, ...(requestId ? { requestId } : {}) }, defaultMvccLimits);
    const entry: Entry = { index: ++index, term: 1, type: EntryType.normal, data };
    const outcomes = store.applyBatch([entry]);
    assert.equal(outcomes.length, 1);
    return outcomes[0] as ApplyOutcome;
  };
  const ok = (op: Command): CommandResult => {
    const outcome = apply(op);
    assert.equal(outcome.type, 'applied', outcome.type === 'failed' ? outcome.error.message : '');
    return (outcome as { result: CommandResult }).result;
  };
  return { apply, ok, store };
}

test('contenders queue in revision order; each sees its predecessor and the owner at its own revision', () => {
  const { ok } = cell();
  for (const id of [1, 2, 3]) ok({ type: 'leaseGrant', ttlMs: 10_000, id });
  const a = ok({ type: 'seqCreate', prefix, value: value('a'), lease: 1, ifEmpty: false });
  ok({ type: 'put', key: '/unrelated', value: value('x') });
  const b = ok({ type: 'seqCreate', prefix, value: value('b'), lease: 2, ifEmpty: false });
  const c = ok({ type: 'seqCreate', prefix, value: value('c'), lease: 3, ifEmpty: false });
  assert.ok(a.type === 'seqCreate' && b.type === 'seqCreate' && c.type === 'seqCreate');
  assert.equal(a.kv.key, `${prefix}${String(a.revision).padStart(12, '0')}`);
  assert.equal(a.kv.createRevision, a.revision);
  assert.equal(a.owner.key, a.kv.key);
  assert.equal(a.predecessor, null);
  assert.ok(b.kv.createRevision > a.kv.createRevision + 1, 'the unrelated put took a revision in between');
  assert.equal(b.owner.key, a.kv.key);
  assert.equal(b.predecessor?.key, a.kv.key);
  assert.equal(c.owner.key, a.kv.key);
  assert.equal(c.predecessor?.key, b.kv.key, 'each waits on its immediate predecessor only');
});

test('try-lock on an occupied queue fails with lock_held naming the holder and writes nothing', () => {
  const { ok, apply, store } = cell();
  ok({ type: 'leaseGrant', ttlMs: 10_000, id: 1 });
  ok({ type: 'leaseGrant', ttlMs: 10_000, id: 2 });
  const held = ok({ type: 'seqCreate', prefix, value: value('{"owner":"a"}'), lease: 1, ifEmpty: true });
  assert.ok(held.type === 'seqCreate' && held.owner.key === held.kv.key);
  const revision = store.revision;
  const refused = apply({ type: 'seqCreate', prefix, value: value('b'), lease: 2, ifEmpty: true }, 'try-1');
  assert.ok(refused.type === 'failed');
  assert.equal(refused.error.code, 'lock_held');
  assert.deepEqual((refused.error.details as { holder: { key: string } }).holder.key, held.kv.key);
  assert.equal(store.revision, revision);
  // The retry of the same request gets the same answer even after the lock was freed.
  ok({ type: 'seqRelease', prefix, key: held.kv.key });
  const retry = apply({ type: 'seqCreate', prefix, value: value('b'), lease: 2, ifEmpty: true }, 'try-1');
  assert.ok(retry.type === 'failed' && retry.duplicate && retry.error.code === 'lock_held');
});

test('a check grants the lowest live contender; a contender whose lease ended is never granted', () => {
  const { ok, apply } = cell();
  for (const id of [1, 2, 3]) ok({ type: 'leaseGrant', ttlMs: 10_000, id });
  const a = ok({ type: 'seqCreate', prefix, value: value('a'), lease: 1, ifEmpty: false });
  const b = ok({ type: 'seqCreate', prefix, value: value('b'), lease: 2, ifEmpty: false });
  const c = ok({ type: 'seqCreate', prefix, value: value('c'), lease: 3, ifEmpty: false });
  assert.ok(a.type === 'seqCreate' && b.type === 'seqCreate' && c.type === 'seqCreate');
  // B's lease expires while it waits: its key goes in the revocation.
  ok({ type: 'leaseRevoke', id: 2 });
  const stale = apply({ type: 'seqCheck', prefix, key: b.kv.key, lease: 2 });
  assert.ok(stale.type === 'failed' && stale.error.code === 'lease_not_found');
  // C is not granted while A holds; its predecessor is now A.
  const waiting = ok({ type: 'seqCheck', prefix, key: c.kv.key, lease: 3 });
  assert.ok(waiting.type === 'seqCheck');
  assert.equal(waiting.owner.key, a.kv.key);
  assert.equal(waiting.predecessor?.key, a.kv.key);
  const released = ok({ type: 'seqRelease', prefix, key: a.kv.key });
  assert.ok(released.type === 'seqRelease' && released.revision > c.revision);
  const granted = ok({ type: 'seqCheck', prefix, key: c.kv.key, lease: 3 });
  assert.ok(granted.type === 'seqCheck' && granted.owner.key === c.kv.key && granted.predecessor === null);
  assert.equal(granted.revision, released.revision, 'granted at or after the predecessor left');
  assert.ok(c.kv.createRevision > a.kv.createRevision, 'tokens increase from holder to holder');
});

test('only the owner can release; a deleted entry is lock_not_held', () => {
  const { ok, apply } = cell();
  ok({ type: 'leaseGrant', ttlMs: 10_000, id: 1 });
  const a = ok({ type: 'seqCreate', prefix, value: value('a'), lease: 1, ifEmpty: false });
  const b = ok({ type: 'seqCreate', prefix, value: value('b'), lease: 1, ifEmpty: false });
  assert.ok(a.type === 'seqCreate' && b.type === 'seqCreate');
  const early = apply({ type: 'seqRelease', prefix, key: b.kv.key });
  assert.ok(early.type === 'failed' && early.error.code === 'lock_not_held');
  ok({ type: 'delete', key: b.kv.key });
  const gone = apply({ type: 'seqCheck', prefix, key: b.kv.key, lease: 1 });
  assert.ok(gone.type === 'failed' && gone.error.code === 'lock_not_held');
  const twice = apply({ type: 'seqRelease', prefix, key: a.kv.key });
  assert.equal(twice.type, 'applied');
  const again = apply({ type: 'seqRelease', prefix, key: a.kv.key });
  assert.ok(again.type === 'failed' && again.error.code === 'lock_not_held');
});

test('a contender needs a live lease; malformed queue commands are refused at the boundary', () => {
  const { apply } = cell();
  const noLease = apply({ type: 'seqCreate', prefix, value: value('a'), lease: 9, ifEmpty: false });
  assert.ok(noLease.type === 'failed' && noLease.error.code === 'lease_not_found');
  const bad: Command[] = [
    { type: 'seqCreate', prefix: '/locks/no-slash', value: value('a'), lease: 1, ifEmpty: false },
    { type: 'seqCheck', prefix, key: '/locks/other/000000000001', lease: 1 },
    { type: 'seqRelease', prefix, key: `${prefix}12` },
  ];
  for (const op of bad) assert.throws(() => encodeCommand({ proposedAtMs: 1, op }, defaultMvccLimits), /invalid|queue|contender/i);
});

test('queue commands survive the binary codec unchanged', () => {
  const ops: Command[] = [
    { type: 'seqCreate', prefix, value: value('v'), lease: 7, ifEmpty: true },
    { type: 'seqCheck', prefix, key: `${prefix}000000000042`, lease: 7 },
    { type: 'seqRelease', prefix, key: `${prefix}000000000042` },
  ];
  for (const op of ops) {
    const decoded = decodeCommand(encodeCommand({ proposedAtMs: 5, op }, defaultMvccLimits), defaultMvccLimits);
    assert.deepEqual({ ...decoded.op, ...('value' in decoded.op ? { value: [...decoded.op.value] } : {}) },
      { ...op, ...('value' in op ? { value: [...op.value] } : {}) });
  }
});
