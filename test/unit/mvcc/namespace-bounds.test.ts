// Each namespace's fence and landing floor on a cell (src/mvcc/namespace-bounds.ts), which watches
// end and start at across moves: recorded at apply as replicated state, so a member reopened on
// its store, or one installed from a snapshot, answers exactly as the members that applied the
// tables. The fence is the revision of the table that first stopped this cell's writes to the
// namespace (later tables keep it; unfencing drops it); the floor is the landing's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryEngine, MvccStore, utf8, type Command } from '../../../src/mvcc/index.js';
import { encodeImportRecord } from '../../../src/mvcc/import-keys.js';
import { commandCell } from './store-cells.js';

function tableOf(epoch: number, mv: Record<string, unknown>): Command {
  const json = JSON.stringify({
    epoch, cell: 'cell-1',
    namespaces: [{ prefix: '/', cell: 'cell-1', epoch: 1 }, { prefix: '/mv/', epoch: 6, ...mv }],
    cells: [{ id: 'cell-1', endpoints: [] }, { id: 'cell-2', endpoints: [] }],
  });
  return { type: 'ownershipSet', record: utf8(json) };
}
const put = (key: string): Command => ({ type: 'put', key, value: utf8('v') });
const mv = { key: '/mv/', prefix: true };
const fenceOf = (store: MvccStore): number | null => store.watchBounds(mv).fence?.revision ?? null;

test('the fence is the first table that stops writes; later tables keep it, unfencing drops it; a reopened store and a snapshot agree', () => {
  const engine = new MemoryEngine();
  const { store, ok } = commandCell({ store: new MvccStore(engine) });
  ok(tableOf(5, { cell: 'cell-1' }));
  ok(put('/mv/a'));
  ok(put('/x'));
  assert.equal(fenceOf(store), null, 'owned: no fence');
  ok(tableOf(6, { cell: 'cell-1', fencedTo: 'cell-2' }));
  assert.equal(fenceOf(store), 2);
  assert.equal(store.watchBounds(mv).fence?.error.code, 'wrong_cell');
  assert.equal(store.watchBounds({ key: '/x', prefix: false }).fence, null, 'other namespaces are not fenced');
  // Aborted: writable again, fence gone; fenced again later at the revision of that table.
  ok(tableOf(7, { cell: 'cell-1' }));
  assert.equal(fenceOf(store), null);
  ok(put('/mv/b'));
  ok(put('/x'));
  ok(tableOf(8, { cell: 'cell-1', fencedTo: 'cell-2' }));
  assert.equal(fenceOf(store), 4);
  // The flip's and the release's tables, at later revisions, keep the first fence.
  ok(put('/x'));
  ok(tableOf(9, { cell: 'cell-1', fencedTo: 'cell-2', epoch: 7 }));
  ok(put('/x'));
  ok(tableOf(10, { cell: 'cell-2', epoch: 7 }));
  assert.equal(store.revision, 6);
  assert.equal(fenceOf(store), 4, 'the namespace\'s history here ends at its fence, whatever came later');
  assert.equal(fenceOf(new MvccStore(engine)), 4, 'a store reopened on the same engine (a restart) knows it');
  const replica = new MvccStore(new MemoryEngine());
  replica.restore(store.snapshot().chunks);
  assert.equal(fenceOf(replica), 4, 'a member installed from a snapshot knows it');
});

test('a landing records its floor (the source\'s fence when named) and drops the fence; a namespace that leaves the table leaves the record', () => {
  const engine = new MemoryEngine();
  const { store, ok, run } = commandCell({ store: new MvccStore(engine) });
  ok(tableOf(5, { cell: 'cell-2' }));
  assert.equal(fenceOf(store), 0, 'assigned elsewhere by the first table: nothing of it here (fence 0)');
  ok(tableOf(6, { cell: 'cell-1', epoch: 7, landingFrom: 'cell-2' }));
  const own = new TextDecoder().decode((tableOf(6, { cell: 'cell-1', epoch: 7 }) as { record: Uint8Array }).record);
  const landing = (fence: number, floor: number): Command => ({ type: 'importKeys', record: encodeImportRecord({ prefix: '/mv/', clear: false, floor, fence, epoch: 6, puts: [], deletes: [], leases: [], own }) });
  assert.equal(run(landing(60, 50)).type, 'failed', 'a fence above the floor is refused');
  ok(landing(40, 50));
  assert.deepEqual({ fence: fenceOf(store), floor: store.watchBounds(mv).floor }, { fence: null, floor: 40 });
  assert.equal(new MvccStore(engine).watchBounds(mv).floor, 40);
  assert.equal(store.watchBounds({ key: '/x', prefix: false }).floor, 0);
  // The root watch spans /mv/: it carries the floor too.
  assert.equal(store.watchBounds({ key: '/', prefix: true }).floor, 40);
  ok({ type: 'ownershipSet', record: utf8(JSON.stringify({ epoch: 7, cell: 'cell-1', namespaces: [{ prefix: '/', cell: 'cell-1', epoch: 1 }], cells: [] })) });
  assert.deepEqual(store.watchBounds(mv), { fence: null, floor: 0 }, 'a namespace gone from the table leaves no bounds');
});

test('a past read of a landed namespace below its floor is compacted (its history is on the source); at or above it, the imported state', () => {
  const { store, ok } = commandCell({ store: new MvccStore(new MemoryEngine()) });
  ok(tableOf(5, { cell: 'cell-2' }));
  ok(put('/x'));
  ok(tableOf(6, { cell: 'cell-1', epoch: 7, landingFrom: 'cell-2' }));
  const own = new TextDecoder().decode((tableOf(6, { cell: 'cell-1', epoch: 7 }) as { record: Uint8Array }).record);
  const kv = (key: string, revision: number) => ({ key, value: utf8('from the source'), version: 1, createRevision: revision, modRevision: revision, lease: 0 });
  // The source's keys, last written at its revisions 30 and 35, land here with floor and fence 40.
  ok({ type: 'importKeys', record: encodeImportRecord({ prefix: '/mv/', clear: true, floor: 40, fence: 40, epoch: 6, puts: [kv('/mv/a', 30), kv('/mv/b', 35)], deletes: [], leases: [], own }) });
  ok(put('/mv/a'));
  ok(put('/x'));
  const read = (revision: number) => store.range({ type: 'get', key: '/mv/', prefix: true, revision });
  for (const below of [1, 2, 30, 39]) {
    assert.throws(() => read(below), (error: Error & { code?: string }) => error.code === 'compacted', `revision ${below}: compacted, not a guess`);
    assert.throws(() => store.range({ type: 'get', key: '/', prefix: true, revision: below }), (error: Error & { code?: string }) => error.code === 'compacted', 'a range spanning it too');
  }
  assert.deepEqual(read(40).kvs.map((k) => [k.key, k.modRevision]), [['/mv/a', 30], ['/mv/b', 35]], 'at the floor: the state the source fenced');
  assert.deepEqual(read(store.revision - 1).kvs.map((k) => [k.key, k.modRevision]), [['/mv/a', store.revision - 1], ['/mv/b', 35]], 'after its first write here');
  assert.equal(store.range({ type: 'get', key: '/x', revision: 2 }).kvs.length, 1, 'other namespaces keep their history');
});
