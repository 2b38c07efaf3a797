// Request-IDs move with their namespace (src/mvcc/namespace-requests.ts): the source lists the
// dedup records of requests under the namespace (not those of other namespaces), a page at a
// time; the destination's import writes them; once it owns the namespace, a client's retry of a
// request the source applied is answered with the source's first outcome and applies nothing.
// Without the records the retry applies a second time (checked too: the test's teeth).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntryType } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand } from '../../../src/mvcc/index.js';
import type { ApplyOutcome, Command } from '../../../src/mvcc/index.js';
import { encodeImportRecord } from '../../../src/mvcc/import-keys.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

function cell(): { store: MvccStore; apply(op: Command, requestId?: string): ApplyOutcome } {
  const store = new MvccStore(new MemoryEngine());
  let index = 0;
  return {
    store,
    apply(op, requestId) {
      index++;
      const data = encodeCommand({ proposedAtMs: 1_000 + index, source: 1, op, ...(requestId === undefined ? {} : { requestId }) }, defaultMvccLimits);
      return store.applyBatch([{ index, term: 1, type: EntryType.normal, data }])[0] as ApplyOutcome;
    },
  };
}

function table(epoch: number, self: string, payOwner: string): Command {
  return {
    type: 'ownershipSet',
    record: text(JSON.stringify({
      epoch, cell: self,
      namespaces: [{ prefix: '/', cell: 'cell-1', epoch: 1 }, { prefix: '/pay/', cell: payOwner, epoch }],
      cells: [{ id: 'cell-1', endpoints: ['http://a:1'] }, { id: 'cell-2', endpoints: ['http://b:1'] }],
    })),
  };
}

const put = (key: string, value: string): Command => ({ type: 'put', key, value: text(value) });

function moveRequests(withRecords: boolean): { retried: ApplyOutcome; first: ApplyOutcome; version: number | undefined } {
  const source = cell();
  source.apply(table(2, 'cell-1', 'cell-1'));
  const first = source.apply(put('/pay/a', 'A'), 'req-pay-1');
  source.apply(put('/other', 'O'), 'req-other-1');
  for (let i = 0; i < 5; i++) source.apply(put(`/pay/k${i}`, 'x'), `req-pay-k${i}`);
  // Listed a page at a time (scanMax 3 of the 7 expiry entries per call).
  const listed: string[] = [];
  const records: { id: Uint8Array; record: Uint8Array }[] = [];
  let after: Uint8Array | null = null;
  for (let page = 0; page < 10; page++) {
    const got = source.store.namespaceRequests('/pay/', { sinceMs: 0, after, scanMax: 3 });
    for (const r of got.requests) {
      listed.push(Buffer.from(r.id).toString('utf8'));
      records.push({ id: r.id, record: r.record });
    }
    if (got.next === null) break;
    after = got.next;
  }
  assert.deepEqual(listed.sort(), ['req-pay-1', 'req-pay-k0', 'req-pay-k1', 'req-pay-k2', 'req-pay-k3', 'req-pay-k4'], 'the namespace\'s requests, not /other\'s');

  const destination = cell();
  destination.apply(table(2, 'cell-2', 'cell-1'));
  const kv = source.store.range({ type: 'get', key: '/pay/a' }).kvs[0];
  assert.ok(kv !== undefined);
  const imported = destination.apply({
    type: 'importKeys',
    record: encodeImportRecord({ prefix: '/pay/', clear: true, floor: source.store.revision, puts: [kv], deletes: [], leases: [], ...(withRecords ? { requests: records } : {}) }),
  });
  assert.equal(imported.type, 'applied', JSON.stringify(imported));
  destination.apply(table(3, 'cell-2', 'cell-2'));
  const retried = destination.apply(put('/pay/a', 'A'), 'req-pay-1');
  return { retried, first, version: destination.store.range({ type: 'get', key: '/pay/a' }).kvs[0]?.version };
}

test('a retry after the move finds the source\'s outcome on the destination and applies nothing', () => {
  const { retried, first, version } = moveRequests(true);
  assert.ok(retried.type === 'applied' && retried.duplicate, JSON.stringify(retried));
  assert.deepEqual(retried.type === 'applied' ? retried.result : null, first.type === 'applied' ? first.result : null);
  assert.equal(version, 1, 'the key was written once');
});

test('without the moved records the retry applies again (what the records prevent)', () => {
  const { retried, version } = moveRequests(false);
  assert.ok(retried.type === 'applied' && !retried.duplicate);
  assert.equal(version, 2);
});

test('an import whose request record does not decode is refused whole, before it writes anything', () => {
  const destination = cell();
  destination.apply(table(2, 'cell-2', 'cell-1'));
  const refused = destination.apply({
    type: 'importKeys',
    record: encodeImportRecord({
      prefix: '/pay/', clear: false, floor: 0, deletes: [], leases: [],
      puts: [{ key: '/pay/z', value: text('z'), version: 1, createRevision: 3, modRevision: 3, lease: 0 }],
      requests: [{ id: text('bad'), record: Uint8Array.of(0xff, 0xff, 0xff) }],
    }),
  });
  assert.ok(refused.type === 'failed' && refused.error.code === 'invalid_argument', JSON.stringify(refused));
  assert.equal(destination.store.range({ type: 'get', key: '/pay/', prefix: true }).kvs.length, 0);
});
