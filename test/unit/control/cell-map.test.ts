// The control plane's cell map as pure changes (src/control/cell-map.ts): the first cell owns the
// root, epochs grow with every change and name each namespace's assignment, a namespace that would
// strand keys cannot be deleted, and the table pushed to a cell is what the state machine accepts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptyCellMap, ownershipTableOf, withCell, withNamespace, withoutNamespace } from '../../../src/control/cell-map.js';
import { parseOwnershipTable } from '../../../src/mvcc/ownership-record.js';

const cells = withCell(withCell(emptyCellMap, { id: 'cell-1', endpoints: ['http://a:1'] }), { id: 'cell-2', endpoints: ['http://b:1'] });

test('the first cell added owns the root; adding the same cell again changes nothing', () => {
  assert.deepEqual(cells.namespaces, [{ prefix: '/', cell: 'cell-1', epoch: 1, state: 'active' }]);
  assert.equal(cells.epoch, 2);
  assert.equal(withCell(cells, { id: 'cell-2', endpoints: ['http://b:1'] }), cells);
  const moved = withCell(cells, { id: 'cell-2', endpoints: ['http://b:2'] });
  assert.equal(moved.epoch, 3, 'new endpoints are a change');
  assert.throws(() => withCell(cells, { id: 'bad id', endpoints: ['http://x:1'] }), /cell id/);
  assert.throws(() => withCell(cells, { id: 'c', endpoints: ['not a url'] }), /endpoint/);
});

test('creating namespaces: each gets the new map epoch; bad, duplicate or unplaced ones are refused', () => {
  const one = withNamespace(cells, '/payments/', 'cell-2');
  const two = withNamespace(one, '/payments/eu/', 'cell-1');
  assert.deepEqual(two.namespaces.map((n) => [n.prefix, n.cell, n.epoch]), [['/', 'cell-1', 1], ['/payments/', 'cell-2', 3], ['/payments/eu/', 'cell-1', 4]]);
  assert.throws(() => withNamespace(two, '/payments/', 'cell-1'), { code: 'precondition_failed' });
  assert.throws(() => withNamespace(two, '/payments', 'cell-1'), { code: 'invalid_argument' });
  assert.throws(() => withNamespace(two, '/x/', 'cell-9'), { code: 'key_not_found' });
});

test('deleting a namespace only when its keys fall to a namespace of the same cell', () => {
  const map = withNamespace(withNamespace(cells, '/payments/', 'cell-2'), '/payments/eu/', 'cell-2');
  const without = withoutNamespace(map, '/payments/eu/');
  assert.deepEqual(without.namespaces.map((n) => n.prefix), ['/', '/payments/']);
  assert.throws(() => withoutNamespace(map, '/payments/'), { code: 'precondition_failed' }, 'its parent / is on cell-1');
  assert.throws(() => withoutNamespace(map, '/'), { code: 'invalid_argument' });
  assert.throws(() => withoutNamespace(map, '/nope/'), { code: 'key_not_found' });
});

test('the table pushed to a cell is deterministic and valid for the state machine', () => {
  const map = withNamespace(cells, '/payments/', 'cell-2');
  const bytes = ownershipTableOf(map, 'cell-2');
  assert.deepEqual(bytes, ownershipTableOf(map, 'cell-2'), 'same map, same bytes (a retried push is a no-op)');
  const table = parseOwnershipTable(bytes);
  assert.equal(table.cell, 'cell-2');
  assert.equal(table.epoch, map.epoch);
  assert.deepEqual(table.namespaces, [{ prefix: '/', cell: 'cell-1', epoch: 1 }, { prefix: '/payments/', cell: 'cell-2', epoch: 3 }]);
});
