// The namespace-ownership table as replicated state (src/mvcc/ownership-record.ts): a cell never
// given one owns every key; once it has one, every keyed command for a namespace of another cell
// is refused at apply with wrong_cell (and its details say who owns it), commands spanning cells
// with cross_cell, and a newer table replaces an older one only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryEngine, MvccStore } from '../../../src/mvcc/index.js';
import type { Command } from '../../../src/mvcc/index.js';
import { batchCell, codeOf } from './store-cells.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

// apply(...ops) is one batch: entries after an ownership change in the same batch see the change.
const cell = () => batchCell({ requestIds: true });

function table(epoch: number, self: string, namespaces: [string, string][]): Command {
  return {
    type: 'ownershipSet',
    record: text(JSON.stringify({
      epoch, cell: self,
      namespaces: namespaces.map(([prefix, owner]) => ({ prefix, cell: owner, epoch })),
      cells: [{ id: 'cell-1', endpoints: ['http://a:1'] }, { id: 'cell-2', endpoints: ['http://b:1', 'http://b:2'] }],
    })),
  };
}

const put = (key: string): Command => ({ type: 'put', key, value: text('v') });

test('without a table a cell owns every key (one cell, as before)', () => {
  const { store, apply } = cell();
  assert.equal(store.ownership(), null);
  assert.equal(codeOf(apply(put('/payments/1'))[0]), 'applied');
  assert.equal(store.refuseCommand(put('/anything')), null);
});

test('a write for a namespace the cell does not own is refused at apply, even if it passed the early check', () => {
  const { store, apply } = cell();
  const write = put('/payments/1');
  // The proposer's check passes: no table yet.
  assert.equal(store.refuseCommand(write), null);
  // The ownership change commits first, then the write, in one batch (a write racing the change).
  const [set, refused, ownKey] = apply(table(2, 'cell-1', [['/', 'cell-1'], ['/payments/', 'cell-2']]), write, put('/other/1'));
  assert.equal(codeOf(set), 'applied');
  assert.equal(codeOf(refused), 'wrong_cell');
  const details = refused?.type === 'failed' ? refused.error.details : {};
  assert.deepEqual(details, { namespace: '/payments/', cell: 'cell-2', epoch: 2, endpoints: ['http://b:1', 'http://b:2'] });
  assert.equal(codeOf(ownKey), 'applied', 'keys of namespaces it owns still apply');
  assert.equal(store.range({ type: 'get', key: '/payments/', prefix: true }).count, 0, 'the refused write left nothing');
  assert.equal(store.refuseCommand(write)?.code, 'wrong_cell', 'and the early check now refuses it too');
});

test('every keyed command is judged: txn sub-ops and compares, prefix deletes, lock queues; spanning is cross_cell', () => {
  const { apply } = cell();
  apply(table(3, 'cell-1', [['/', 'cell-1'], ['/payments/', 'cell-2'], ['/locks/pay/', 'cell-2']]));
  const txn = (keys: string[], compareKey?: string): Command => ({
    type: 'txn',
    compare: compareKey === undefined ? [] : [{ key: compareKey, target: 'version', op: '==', value: 0 }],
    success: keys.map((key) => ({ type: 'put', key, value: text('v') })),
    failure: [],
  });
  assert.equal(codeOf(apply(txn(['/a', '/b']))[0]), 'applied');
  assert.equal(codeOf(apply(txn(['/payments/a']))[0]), 'wrong_cell');
  assert.equal(codeOf(apply(txn(['/a', '/payments/a']))[0]), 'cross_cell');
  assert.equal(codeOf(apply(txn(['/a'], '/payments/a'))[0]), 'cross_cell', 'a compare names a key too');
  assert.equal(codeOf(apply({ type: 'delete', key: '/', prefix: true })[0]), 'cross_cell', 'a prefix delete over other cells\' namespaces');
  assert.equal(codeOf(apply({ type: 'delete', key: '/payments/', prefix: true })[0]), 'wrong_cell');
  const grant = apply({ type: 'leaseGrant', ttlMs: 5_000 })[0];
  assert.equal(codeOf(grant), 'applied', 'a lease names no key');
  const lease = grant?.type === 'applied' && grant.result.type === 'leaseGrant' ? grant.result.id : 0;
  assert.equal(codeOf(apply({ type: 'seqCreate', prefix: '/locks/pay/', value: text(''), lease, ifEmpty: false })[0]), 'wrong_cell');
  assert.equal(codeOf(apply({ type: 'seqCreate', prefix: '/locks/mine/', value: text(''), lease, ifEmpty: false })[0]), 'applied');
  const cross = apply(txn(['/a', '/payments/a']))[0];
  assert.deepEqual(cross?.type === 'failed' ? cross.error.details : null, {
    namespaces: [{ namespace: '/', cell: 'cell-1' }, { namespace: '/payments/', cell: 'cell-2' }],
  });
});

test('reads are judged the same way', () => {
  const { store, apply } = cell();
  apply(table(1, 'cell-2', [['/', 'cell-1'], ['/payments/', 'cell-2']]));
  assert.equal(store.refuseRead({ type: 'get', key: '/payments/x' }), null);
  assert.equal(store.refuseRead({ type: 'get', key: '/x' })?.code, 'wrong_cell');
  assert.equal(store.refuseRead({ type: 'get', key: '/', prefix: true })?.code, 'cross_cell');
});

test('a newer table replaces an older one; an older one is refused; the same one again changes nothing', () => {
  const { store, apply } = cell();
  const revision = store.revision;
  assert.equal(codeOf(apply(table(5, 'cell-1', [['/', 'cell-1']]))[0]), 'applied');
  assert.equal(codeOf(apply(table(5, 'cell-1', [['/', 'cell-1']]))[0]), 'applied', 'a retried push');
  assert.equal(codeOf(apply(table(4, 'cell-1', [['/', 'cell-2']]))[0]), 'precondition_failed');
  assert.equal(codeOf(apply(put('/x'))[0]), 'applied', 'the stale table did not take the root away');
  assert.equal(codeOf(apply(table(6, 'cell-1', [['/', 'cell-2']]))[0]), 'applied');
  assert.equal(codeOf(apply(put('/y'))[0]), 'wrong_cell');
  assert.equal(store.ownership()?.table.epoch, 6);
  assert.equal(store.revision, revision + 1, 'ownership changes are not key-space revisions');
  const replica = new MvccStore(new MemoryEngine());
  replica.restore(store.snapshot().chunks);
  assert.equal(replica.refuseCommand(put('/z'))?.code, 'wrong_cell', 'a snapshot carries the table');
});

test('a malformed table is refused and changes nothing', () => {
  const { store, apply } = cell();
  const bad = (json: unknown): Command => ({ type: 'ownershipSet', record: text(JSON.stringify(json)) });
  assert.equal(codeOf(apply(bad({ epoch: 1, cell: 'c', namespaces: [], cells: [] }))[0]), 'invalid_argument', 'no root namespace');
  assert.equal(codeOf(apply(bad({ epoch: 1, cell: 'c', namespaces: [{ prefix: '/a', cell: 'c', epoch: 1 }, { prefix: '/', cell: 'c', epoch: 1 }], cells: [] }))[0]), 'invalid_argument');
  assert.equal(codeOf(apply({ type: 'ownershipSet', record: text('{') })[0]), 'invalid_argument');
  assert.equal(store.ownership(), null);
});

function fenceTable(epoch: number, nsEpoch: number): Command {
  return {
    type: 'ownershipSet',
    record: text(JSON.stringify({
      epoch, cell: 'cell-1',
      namespaces: [{ prefix: '/', cell: 'cell-1', epoch: 1 }, { prefix: '/payments/', cell: 'cell-1', epoch: nsEpoch, fencedTo: 'cell-2' }],
      cells: [{ id: 'cell-1', endpoints: ['http://a:1'] }, { id: 'cell-2', endpoints: ['http://b:1', 'http://b:2'] }],
    })),
  };
}

test('a namespace fenced for a move refuses writes at apply naming the destination and the coming epoch, and still serves reads', () => {
  const { store, apply } = cell();
  const write = put('/payments/1');
  const [before, set, racing, other, txn] = apply(
    put('/payments/0'),
    fenceTable(3, 3),
    // A write racing the fence: the proposer's check passed, it is judged at apply by its position.
    write,
    put('/other/1'),
    { type: 'txn', compare: [], success: [{ type: 'put', key: '/payments/2', value: text('v') }], failure: [] },
  );
  assert.equal(codeOf(before), 'applied');
  assert.equal(codeOf(set), 'applied');
  assert.equal(codeOf(racing), 'wrong_cell');
  assert.deepEqual(racing?.type === 'failed' ? racing.error.details : {}, { namespace: '/payments/', cell: 'cell-2', epoch: 4, endpoints: ['http://b:1', 'http://b:2'] });
  assert.equal(codeOf(other), 'applied', 'the fence is per namespace: the rest of the cell keeps writing');
  assert.equal(codeOf(txn), 'wrong_cell', 'a txn writing into the fenced namespace is refused too');
  assert.equal(store.refuseCommand(write)?.code, 'wrong_cell', 'the proposer refuses before proposing as well');
  assert.equal(store.refuseRead({ type: 'get', key: '/payments/', prefix: true }), null, 'reads of the fenced namespace are still served at the source');
});

test('a table that fences a namespace towards its own cell is refused', () => {
  const { apply } = cell();
  const bad: Command = {
    type: 'ownershipSet',
    record: text(JSON.stringify({ epoch: 2, cell: 'cell-1', namespaces: [{ prefix: '/', cell: 'cell-1', epoch: 1, fencedTo: 'cell-1' }], cells: [] })),
  };
  assert.equal(codeOf(apply(bad)[0]), 'invalid_argument');
});
