// The authorization policy record as replicated state (src/mvcc/policy-record.ts): policySet
// commands round-trip through the entry codec, apply in version order (a change from a stale
// read fails and changes nothing), leave the key space's revision alone, survive a snapshot into
// another store, and refuse records over the bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryEngine, MvccStore, decodeCommand, defaultMvccLimits, encodeCommand, policyRecordBytesMax } from '../../../src/mvcc/index.js';
import type { Command } from '../../../src/mvcc/index.js';
import { batchCell } from './store-cells.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

test('policySet round-trips through the entry codec', () => {
  const op: Command = { type: 'policySet', record: text('{"enabled":false}'), ifVersion: 3 };
  const decoded = decodeCommand(encodeCommand({ proposedAtMs: 5, op }, defaultMvccLimits), defaultMvccLimits);
  assert.equal(decoded.op.type, 'policySet');
  assert.deepEqual(decoded.op.type === 'policySet' ? [Buffer.from(decoded.op.record).toString(), decoded.op.ifVersion] : null, ['{"enabled":false}', 3]);
  assert.throws(() => encodeCommand({ proposedAtMs: 5, op: { type: 'policySet', record: new Uint8Array(policyRecordBytesMax + 1), ifVersion: 0 } }, defaultMvccLimits), /policy record/);
});

test('changes apply in version order; a stale one fails and changes nothing; the revision stays', () => {
  const { store, applyOne } = batchCell();
  assert.deepEqual(store.policyRecord(), { version: 0, record: null });
  applyOne({ type: 'put', key: '/k', value: text('v') });
  const revision = store.revision;
  const first = applyOne({ type: 'policySet', record: text('one'), ifVersion: 0 });
  assert.equal(first.type, 'applied');
  assert.deepEqual(first.type === 'applied' ? first.result : null, { type: 'policySet', version: 1, revision });
  const stale = applyOne({ type: 'policySet', record: text('stale'), ifVersion: 0 });
  assert.equal(stale.type, 'failed');
  assert.equal(stale.type === 'failed' ? stale.error.code : '', 'precondition_failed');
  const second = applyOne({ type: 'policySet', record: text('two'), ifVersion: 1 });
  assert.equal(second.type === 'applied' ? (second.result as { version: number }).version : 0, 2);
  const stored = store.policyRecord();
  assert.equal(stored.version, 2);
  assert.equal(Buffer.from(stored.record ?? new Uint8Array()).toString(), 'two');
  assert.equal(store.revision, revision, 'a policy change is not a key-space revision');
});

test('a snapshot carries the policy to another store', () => {
  const { store, applyOne } = batchCell();
  applyOne({ type: 'policySet', record: text('carried'), ifVersion: 0 });
  const replica = new MvccStore(new MemoryEngine());
  replica.restore(store.snapshot().chunks);
  assert.equal(replica.policyRecord().version, 1);
  assert.equal(Buffer.from(replica.policyRecord().record ?? new Uint8Array()).toString(), 'carried');
});
