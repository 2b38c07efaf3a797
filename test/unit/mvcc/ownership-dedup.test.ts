// A retry of a write this cell applied before its namespace was fenced (or left) is answered from
// the Request-ID record, not refused wrong_cell: the write happened here and its first answer was
// lost (issue 24; fault run across cells, seed 3, read back a put reported refused). Only that:
// a Request-ID with no record here (never applied, or refused at the fence) is still wrong_cell,
// the same ID with another body is request_id_reused, and the answer writes nothing (the state is
// that of a refusal, so members judging ownership first keep the same bytes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntryType, type Entry } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand } from '../../../src/mvcc/index.js';
import type { ApplyOutcome, Command } from '../../../src/mvcc/index.js';
import { codeOf } from './store-cells.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

/** cell-1's ownership table: /pay/ its own, fenced towards cell-2, or moved to cell-2. */
function payTable(epoch: number, state: 'owned' | 'fenced' | 'moved'): Command {
  const pay = { prefix: '/pay/', cell: state === 'moved' ? 'cell-2' : 'cell-1', epoch, ...(state === 'fenced' ? { fencedTo: 'cell-2' } : {}) };
  return {
    type: 'ownershipSet',
    record: text(JSON.stringify({
      epoch, cell: 'cell-1',
      namespaces: [{ prefix: '/', cell: 'cell-1', epoch: 1 }, pay],
      cells: [{ id: 'cell-1', endpoints: ['http://a:1'] }, { id: 'cell-2', endpoints: ['http://b:1'] }],
    })),
  };
}

/** One replica; entries are proposed by member 1, 10 ms apart on its clock. */
function replica(): { store: MvccStore; apply(op: Command, requestId?: string): ApplyOutcome } {
  const store = new MvccStore(new MemoryEngine());
  let index = 0;
  const apply = (op: Command, requestId?: string): ApplyOutcome => {
    index++;
    const envelope = { ...(requestId === undefined ? {} : { requestId }), proposedAtMs: 1_000 + 10 * index, source: 1, op };
    const entry: Entry = { index, term: 1, type: EntryType.normal, data: encodeCommand(envelope, defaultMvccLimits) };
    const [outcome] = store.applyBatch([entry]);
    assert.ok(outcome !== undefined);
    return outcome;
  };
  return { store, apply };
}

const put = (key: string, value: string): Command => ({ type: 'put', key, value: text(value) });
const resultOf = (outcome: ApplyOutcome): unknown => (outcome.type === 'applied' ? outcome.result : null);

test('a retry of a put applied before the fence gets its first answer; a new Request-ID is wrong_cell; another body is request_id_reused', () => {
  const { store, apply } = replica();
  assert.equal(codeOf(apply(payTable(2, 'owned'))), 'applied');
  const first = apply(put('/pay/k', 'v1'), 'R');
  assert.equal(codeOf(first), 'applied');
  assert.equal(codeOf(apply(payTable(3, 'fenced'))), 'applied');
  const revision = store.revision;

  const retry = apply(put('/pay/k', 'v1'), 'R');
  assert.equal(codeOf(retry), 'applied', 'the retry is answered, not refused');
  assert.ok(retry.type === 'applied' && retry.duplicate, 'as a duplicate');
  assert.deepEqual(resultOf(retry), resultOf(first), 'with the first attempt\'s result (its revision)');
  assert.equal(store.revision, revision, 'and applies nothing');
  assert.equal(store.range({ type: 'get', key: '/pay/k' }).kvs[0]?.version, 1);

  const fresh = apply(put('/pay/k', 'v1'), 'S');
  assert.equal(codeOf(fresh), 'wrong_cell', 'a Request-ID with no record here is refused as before');
  assert.deepEqual(fresh.type === 'failed' ? fresh.error.details : null, { namespace: '/pay/', cell: 'cell-2', epoch: 4, endpoints: ['http://b:1'] });
  assert.equal(codeOf(apply(put('/pay/k', 'v2'), 'R')), 'request_id_reused', 'the same ID with another body: the existing conflict answer');
  assert.equal(store.range({ type: 'get', key: '/pay/k' }).kvs[0]?.value.length, 2, 'v1 stays');

  // Before proposing: the same rule, so the retry is not refused at the edge (apply answers it).
  assert.equal(store.refuseCommand(put('/pay/k', 'v1'), 'R'), null);
  assert.equal(store.refuseCommand(put('/pay/k', 'v1'), 'S')?.code, 'wrong_cell');
  assert.equal(store.refuseCommand(put('/pay/k', 'v1'))?.code, 'wrong_cell');

  // After the flip (the namespace owned by cell-2) the source still answers R from its record.
  assert.equal(codeOf(apply(payTable(4, 'moved'))), 'applied');
  assert.deepEqual(resultOf(apply(put('/pay/k', 'v1'), 'R')), resultOf(first));
  assert.equal(codeOf(apply(put('/pay/k', 'v1'), 'T')), 'wrong_cell');
});

test('a write refused at the fence records nothing: its retry is wrong_cell too', () => {
  const { apply } = replica();
  assert.equal(codeOf(apply(payTable(3, 'fenced'))), 'applied');
  assert.equal(codeOf(apply(put('/pay/k', 'v'), 'R')), 'wrong_cell', 'the first attempt, after the fence');
  assert.equal(codeOf(apply(put('/pay/k', 'v'), 'R')), 'wrong_cell', 'no false success for its retry');
});

test('a retry answered from its record leaves the state a refusal leaves, on every replica', () => {
  // Two replicas of the same log up to the fence; then one applies R's retry, the other a write
  // refused at the fence (same proposer, same clock). Both wrote nothing but the dedup clock.
  const [a, b] = [replica(), replica()];
  for (const { apply } of [a, b]) {
    apply(payTable(2, 'owned'));
    apply(put('/pay/k', 'v1'), 'R');
    apply(payTable(3, 'fenced'));
  }
  assert.equal(codeOf(a.apply(put('/pay/k', 'v1'), 'R')), 'applied');
  assert.equal(codeOf(b.apply(put('/pay/k', 'v1'), 'S')), 'wrong_cell');
  assert.equal(a.store.hash({ includeAppliedIndex: true }), b.store.hash({ includeAppliedIndex: true }));
});
