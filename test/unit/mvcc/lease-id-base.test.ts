// Lease ids across cells (store format 5, src/mvcc/lease-state.ts): a cell with an ownership table
// assigns ids from its cell's base, so two cells never assign the same id and a lease a namespace
// move brings along keeps its id without meeting one of the destination's. A lease brought from
// another cell's range does not carry the counter there; an id once assigned is never assigned
// again; below format 5 (a cell with members on older builds) ids stay as they were.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryEngine, defaultMvccLimits } from '../../../src/mvcc/index.js';
import { grantLease, grantLeases, leaseIdBase, leaseIdSpan, removeLease } from '../../../src/mvcc/lease-state.js';
import { applyOwnershipSet } from '../../../src/mvcc/ownership-record.js';
import type { KvWriter, StoreFormat } from '../../../src/mvcc/types.js';

const limits = defaultMvccLimits;

function cell(id: string | null): MemoryEngine {
  const engine = new MemoryEngine();
  if (id !== null) {
    const record = new TextEncoder().encode(JSON.stringify({
      epoch: 1, cell: id, namespaces: [{ prefix: '/', cell: id, epoch: 1 }], cells: [{ id, endpoints: ['http://a:1'] }],
    }));
    engine.write((writer) => applyOwnershipSet(writer, { type: 'ownershipSet', record }));
  }
  return engine;
}

const grant = (engine: MemoryEngine, format: StoreFormat, id?: number): number =>
  engine.write((writer: KvWriter) => grantLease(writer, { ttlMs: 10_000, id }, limits, format).id);

test('every cell id has a base: a multiple of the span, and its whole range is safe integers', () => {
  for (let i = 0; i < 5_000; i++) {
    const base = leaseIdBase(`cell-${i}`);
    assert.equal(base % leaseIdSpan, 0);
    assert.ok(base >= leaseIdSpan && base + leaseIdSpan - 1 <= Number.MAX_SAFE_INTEGER, `cell-${i}: ${base}`);
  }
  assert.equal(leaseIdBase('cell-1'), leaseIdBase('cell-1'), 'the same on every member');
  assert.notEqual(leaseIdBase('cell-1'), leaseIdBase('cell-2'));
});

test('two cells in format 5 assign disjoint ids; a cell without a table keeps small ones', () => {
  const one = cell('cell-1');
  const two = cell('cell-2');
  const alone = cell(null);
  const ids1 = [grant(one, 5), grant(one, 5), ...one.write((w) => grantLeases(w, [{ ttlMs: 10_000 }, { ttlMs: 10_000 }], limits, 5)).map((l) => l.id)];
  const ids2 = [grant(two, 5), grant(two, 5)];
  const base1 = leaseIdBase('cell-1');
  assert.deepEqual(ids1, [base1, base1 + 1, base1 + 2, base1 + 3]);
  assert.deepEqual(ids2, [leaseIdBase('cell-2'), leaseIdBase('cell-2') + 1]);
  assert.deepEqual([grant(alone, 5), grant(alone, 5)], [1, 2]);
});

test('a lease brought from another cell keeps its id and leaves the counter in this cell\'s range', () => {
  const two = cell('cell-2');
  const first = grant(two, 5);
  const moved = leaseIdBase('cell-1') + 7; // what a move's import grants: the origin's id
  assert.equal(grant(two, 5, moved), moved);
  assert.equal(grant(two, 5), first + 1, 'the next id is still cell-2\'s');
  assert.equal(two.write((w) => grantLeases(w, [{ ttlMs: 10_000, id: moved + 1 }, { ttlMs: 10_000 }], limits, 5)).map((l) => l.id)[1], first + 2);
});

test('an id once assigned is not assigned again after its lease is gone', () => {
  const one = cell('cell-1');
  const base = leaseIdBase('cell-1');
  assert.equal(grant(one, 5, base + 5), base + 5, 'a client\'s id in this cell\'s range');
  one.write((w) => removeLease(w, base + 5));
  const next = [grant(one, 5), grant(one, 5)];
  assert.ok(next.every((id) => id > base + 5), `past the named id: ${next}`);
});

test('below format 5 a cell with a table assigns as before: from 1, a named id moves the counter', () => {
  const one = cell('cell-1');
  assert.deepEqual([grant(one, 4), grant(one, 4)], [1, 2]);
  assert.equal(grant(one, 4, 10), 10);
  assert.equal(grant(one, 4), 11);
  // Once the cell moves to format 5, the next id is its base: above every id it assigned.
  assert.equal(grant(one, 5), leaseIdBase('cell-1'));
});
