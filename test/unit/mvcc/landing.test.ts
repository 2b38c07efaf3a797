// A move's landing on the destination (docs/design/cells.md, "The write window"): once the move
// flipped, the destination's table holds the namespace `landingFrom` the source: it refuses reads
// and writes of it (503, the source still serves reads) but still takes imports. The landing
// import (an importKeys with `own`) applies the last changes, raises the floor and installs the
// table giving the cell the namespace, in one command: the first write after it is above the
// floor, and nothing can be imported into the namespace any more. A stale landing (an older map)
// changes nothing, and a later table still marking the namespace landing for the same assignment
// does not take it back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Command, MvccStore } from '../../../src/mvcc/index.js';
import { encodeImportRecord } from '../../../src/mvcc/import-keys.js';
import { batchCell, codeOf } from './store-cells.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

/** cell-2's table at `epoch`: /pay/ as given (owner, its epoch, landing or fenced). */
function tableJson(epoch: number, pay: Record<string, unknown>, extra: Record<string, unknown>[] = []): string {
  return JSON.stringify({
    epoch, cell: 'cell-2',
    namespaces: [{ prefix: '/', cell: 'cell-2', epoch: 1 }, { prefix: '/pay/', ...pay }, ...extra],
    cells: [{ id: 'cell-1', endpoints: ['http://a:1'] }, { id: 'cell-2', endpoints: ['http://b:1'] }],
  });
}
const setTable = (json: string): Command => ({ type: 'ownershipSet', record: text(json) });
const importOf = (record: Parameters<typeof encodeImportRecord>[0]): Command => ({ type: 'importKeys', record: encodeImportRecord(record) });
const kv = (key: string, value: string, createRevision: number, modRevision: number, version: number) =>
  ({ key, value: text(value), createRevision, modRevision, version, lease: 0 });
const put = (key: string, value: string): Command => ({ type: 'put', key, value: text(value) });
const keysOf = (store: MvccStore): string[] => store.range({ type: 'get', key: '/pay/', prefix: true }).kvs.map((k) => k.key);

const fencedEra = tableJson(5, { cell: 'cell-1', epoch: 2 });
const landingAt6 = tableJson(6, { cell: 'cell-2', epoch: 6, landingFrom: 'cell-1' });
const landedAt6 = tableJson(6, { cell: 'cell-2', epoch: 6 });

test('a landing namespace refuses reads and writes but takes imports; the landing import owns it in the same command', () => {
  const { store, apply } = batchCell();
  apply(setTable(fencedEra));
  assert.equal(codeOf(apply(importOf({ prefix: '/pay/', clear: true, floor: 300, epoch: 5, puts: [kv('/pay/a', 'A', 100, 290, 3)], deletes: [], leases: [] }))[0]), 'applied');
  // The flip's table: landing.
  assert.equal(codeOf(apply(setTable(landingAt6))[0]), 'applied');
  const [refusedWrite] = apply(put('/pay/a', 'too early'));
  assert.equal(codeOf(refusedWrite), 'unavailable');
  assert.equal(store.refuseRead({ type: 'get', key: '/pay/a' })?.code, 'unavailable');
  assert.equal(store.range({ type: 'get', key: '/pay/a' }).kvs[0]?.version, 3, 'the refused write changed nothing');
  // Other namespaces of the cell are not affected.
  assert.equal(codeOf(apply(put('/other', 'o'))[0]), 'applied');
  // A catch-up import still lands while the namespace is landing.
  assert.equal(codeOf(apply(importOf({ prefix: '/pay/', clear: false, floor: 310, epoch: 6, puts: [kv('/pay/b', 'B', 305, 305, 1)], deletes: [], leases: [] }))[0]), 'applied');
  // The landing: the last change, the floor (the fence revision) and the table, one entry; a
  // write in the same batch after it is taken and is above the floor.
  const [landing, write] = apply(
    importOf({ prefix: '/pay/', clear: false, floor: 400, epoch: 6, puts: [kv('/pay/a', 'A4', 100, 395, 4)], deletes: ['/pay/b'], leases: [], own: landedAt6 }),
    put('/pay/a', 'A5'),
  );
  assert.equal(codeOf(landing), 'applied');
  assert.equal(codeOf(write), 'applied');
  const a = store.range({ type: 'get', key: '/pay/a' }).kvs[0];
  assert.deepEqual({ value: new TextDecoder().decode(a?.value), version: a?.version, create: a?.createRevision }, { value: 'A5', version: 5, create: 100 });
  assert.ok((a?.modRevision ?? 0) > 400, `the first write after the landing is above the floor: ${a?.modRevision}`);
  assert.deepEqual(keysOf(store), ['/pay/a']);
  assert.equal(store.refuseRead({ type: 'get', key: '/pay/a' }), null);
  assert.equal(store.ownership()?.table.epoch, 6);
  // Owned now: a repeated landing (a retry, a deposed mover) and a late import are refused and change nothing.
  const [again] = apply(importOf({ prefix: '/pay/', clear: true, floor: 0, epoch: 6, puts: [], deletes: [], leases: [], own: landedAt6 }));
  assert.equal(codeOf(again), 'precondition_failed');
  assert.equal(new TextDecoder().decode(store.range({ type: 'get', key: '/pay/a' }).kvs[0]?.value), 'A5');
});

test('a landing import made at an older map, or into a cell that holds the namespace owned, is refused and changes nothing', () => {
  const { store, apply } = batchCell();
  apply(setTable(fencedEra));
  // The map moved on (epoch 7) while the move was flipped: a landing cut from epoch 6 is stale.
  apply(setTable(tableJson(7, { cell: 'cell-2', epoch: 6, landingFrom: 'cell-1' }, [{ prefix: '/q/', cell: 'cell-1', epoch: 7 }])));
  const revision = store.revision;
  const [stale] = apply(importOf({ prefix: '/pay/', clear: false, floor: 900, epoch: 6, puts: [kv('/pay/a', 'A', 1, 2, 1)], deletes: [], leases: [], own: landedAt6 }));
  assert.equal(codeOf(stale), 'precondition_failed');
  assert.equal(store.revision, revision, 'no floor raised');
  assert.deepEqual(keysOf(store), [], 'no key written');
  assert.equal(store.refuseRead({ type: 'get', key: '/pay/a' })?.code, 'unavailable', 'still landing');
  // A landing table that does not give the namespace to this cell is refused.
  const [bad] = apply(importOf({ prefix: '/pay/', clear: false, floor: 0, epoch: 8, puts: [], deletes: [], leases: [], own: tableJson(8, { cell: 'cell-1', epoch: 8 }) }));
  assert.equal(codeOf(bad), 'invalid_argument');
  // The one cut from the current map lands.
  const current = tableJson(7, { cell: 'cell-2', epoch: 6 }, [{ prefix: '/q/', cell: 'cell-1', epoch: 7 }]);
  assert.equal(codeOf(apply(importOf({ prefix: '/pay/', clear: false, floor: 900, epoch: 7, puts: [], deletes: [], leases: [], own: current }))[0]), 'applied');
  assert.equal(store.revision, 900);
  assert.equal(codeOf(apply(put('/pay/a', 'x'))[0]), 'applied');
});

test('a newer table still marking a landed namespace landing (same assignment) does not take it back', () => {
  const { store, apply } = batchCell();
  apply(setTable(fencedEra), setTable(landingAt6));
  assert.equal(codeOf(apply(importOf({ prefix: '/pay/', clear: false, floor: 50, epoch: 6, puts: [], deletes: [], leases: [], own: landedAt6 }))[0]), 'applied');
  // Another change of the map (epoch 7) cut before the move's record said released.
  assert.equal(codeOf(apply(setTable(tableJson(7, { cell: 'cell-2', epoch: 6, landingFrom: 'cell-1' })))[0]), 'applied');
  assert.equal(store.ownership()?.table.epoch, 7);
  assert.equal(codeOf(apply(put('/pay/a', 'still mine'))[0]), 'applied');
  // The same table pushed again is 412 (the cell holds its landed version): the pusher counts it as held.
  assert.equal(codeOf(apply(setTable(tableJson(7, { cell: 'cell-2', epoch: 6, landingFrom: 'cell-1' })))[0]), 'precondition_failed');
  // A later assignment (a new move back and forth: another epoch) may be landing again.
  assert.equal(codeOf(apply(setTable(tableJson(9, { cell: 'cell-2', epoch: 9, landingFrom: 'cell-1' })))[0]), 'applied');
  assert.equal(codeOf(apply(put('/pay/a', 'refused'))[0]), 'unavailable');
});

test('a table both fencing and landing a namespace, or landing it from its own cell, is refused', () => {
  const { apply } = batchCell();
  assert.equal(codeOf(apply(setTable(tableJson(3, { cell: 'cell-2', epoch: 3, landingFrom: 'cell-2' })))[0]), 'invalid_argument');
  assert.equal(codeOf(apply(setTable(tableJson(3, { cell: 'cell-2', epoch: 3, landingFrom: 'cell-1', fencedTo: 'cell-1' })))[0]), 'invalid_argument');
});
