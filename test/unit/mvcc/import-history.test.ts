// History across a move's clean-up (src/mvcc/import-keys.ts keepLastPutValue): when a namespace
// has left a cell, the import that clears its keys removes their current records, where history
// found the value of each key's last put. A watch catching up from before then stopped the node
// (an assert: "the kv of a put at its revision"), whatever prefix it watched. Found by the
// simulator's cells world (`baton sim --world cells --watches --seed 1`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Command } from '../../../src/mvcc/index.js';
import { encodeImportRecord } from '../../../src/mvcc/import-keys.js';
import { batchCell, codeOf } from './store-cells.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const decode = (b: Uint8Array): string => new TextDecoder().decode(b);

function table(epoch: number, aOwner: string): Command {
  return {
    type: 'ownershipSet',
    record: text(JSON.stringify({
      epoch, cell: 'cell-1',
      namespaces: [{ prefix: '/', cell: 'cell-1', epoch: 1 }, { prefix: '/a/', cell: aOwner, epoch }],
      cells: [{ id: 'cell-1', endpoints: ['http://a:1'] }, { id: 'cell-2', endpoints: ['http://b:1'] }],
    })),
  };
}

test('after a moved namespace is cleared, its history still reads with every value', () => {
  const { store, apply } = batchCell();
  const before = apply(
    table(1, 'cell-1'),
    { type: 'put', key: '/a/k', value: text('v1') },
    { type: 'put', key: '/a/k', value: text('v2') },
    { type: 'put', key: '/a/j', value: text('j1') },
    { type: 'put', key: '/b', value: text('x') },
  );
  assert.deepEqual(before.map(codeOf), ['applied', 'applied', 'applied', 'applied', 'applied']);
  // The move released: /a/ is cell-2's, and the source's copy is removed.
  const after = apply(table(2, 'cell-2'), {
    type: 'importKeys', record: encodeImportRecord({ prefix: '/a/', clear: true, floor: 0, puts: [], deletes: [], leases: [] }),
  });
  assert.deepEqual(after.map(codeOf), ['applied', 'applied']);
  assert.equal(store.range({ type: 'get', key: '/b' }).kvs.length, 1, 'other keys stay');
  const events = store.events({ startRevision: 1, limit: 100 });
  assert.deepEqual(events.map((e) => [e.type, e.kv.key, decode(e.kv.value), e.revision]), [
    ['put', '/a/k', 'v1', 1],
    ['put', '/a/k', 'v2', 2],
    ['put', '/a/j', 'j1', 3],
    ['put', '/b', 'x', 4],
  ]);
});
