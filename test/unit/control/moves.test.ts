// Move records in the cell map (src/control/moves.ts): the phases advance one at a time by
// compare-and-set, the fence shows up in the source's ownership table only, the flip assigns the
// namespace to the destination under a new epoch, an abort works until the flip and not after,
// the root is refused, and a namespace with namespaces nested in it moves without them (none can
// be created in it until its move is over and its old copy cleared).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ownershipTableOf, parseCellMap, withCell, withNamespace, type CellMap } from '../../../src/control/cell-map.js';
import { movesToDrive, withMoveAborted, withMoveAdvanced, withMoveCleaned, withMoveStarted } from '../../../src/control/moves.js';

function twoCells(): CellMap {
  let map = withCell({ epoch: 0, cells: [], namespaces: [] }, { id: 'cell-1', endpoints: ['http://a:1'] });
  map = withCell(map, { id: 'cell-2', endpoints: ['http://b:1'] });
  return withNamespace(map, '/pay/', 'cell-1');
}

const tableOf = (map: CellMap, cell: string, landed?: string) => JSON.parse(new TextDecoder().decode(ownershipTableOf(map, cell, landed))) as {
  namespaces: { prefix: string; cell: string; epoch: number; fencedTo?: string; landingFrom?: string }[];
};
const payOf = (map: CellMap, cell: string, landed?: string) => tableOf(map, cell, landed).namespaces.find((n) => n.prefix === '/pay/');

test('a move goes copying -> catching-up -> fenced -> flipped -> released; the fence is in the source table only', () => {
  let map = withMoveStarted(twoCells(), '/pay/', 'cell-2', 1);
  const id = map.moves?.[0]?.id as number;
  assert.equal(map.namespaces.find((n) => n.prefix === '/pay/')?.state, 'moving');
  assert.throws(() => withMoveAdvanced(map, id, 'catching-up', {}, 2), /is copying, not catching-up/);
  map = withMoveAdvanced(map, id, 'copying', { copyRevision: 10 }, 2);
  map = withMoveAdvanced(map, id, 'catching-up', {}, 3);
  assert.equal(tableOf(map, 'cell-1').namespaces.find((n) => n.prefix === '/pay/')?.fencedTo, 'cell-2');
  assert.equal(tableOf(map, 'cell-2').namespaces.find((n) => n.prefix === '/pay/')?.fencedTo, undefined);
  const before = map.epoch;
  map = withMoveAdvanced(map, id, 'fenced', { fenceRevision: 42 }, 4);
  const pay = map.namespaces.find((n) => n.prefix === '/pay/');
  assert.deepEqual(pay, { prefix: '/pay/', cell: 'cell-2', epoch: before + 1, state: 'active' });
  // Flipped, not released: the source keeps it fenced (serving reads; its refusals name the
  // destination at the flip's epoch); the destination holds it landing until the landing import,
  // whose table (cut with `landed`) gives it the namespace.
  assert.deepEqual(payOf(map, 'cell-1'), { prefix: '/pay/', cell: 'cell-1', epoch: before, fencedTo: 'cell-2' });
  assert.deepEqual(payOf(map, 'cell-2'), { prefix: '/pay/', cell: 'cell-2', epoch: before + 1, landingFrom: 'cell-1' });
  assert.deepEqual(payOf(map, 'cell-2', '/pay/'), { prefix: '/pay/', cell: 'cell-2', epoch: before + 1 });
  // Once landed, the source is told at once (it stops serving reads that would miss the new writes).
  assert.deepEqual(payOf(map, 'cell-1', '/pay/'), { prefix: '/pay/', cell: 'cell-2', epoch: before + 1 });
  assert.throws(() => withMoveAborted(map, '/pay/', 'no', 5), /past its flip/);
  map = withMoveAdvanced(map, id, 'flipped', {}, 5);
  assert.equal(map.moves?.[0]?.phase, 'released');
  assert.deepEqual(payOf(map, 'cell-1'), { prefix: '/pay/', cell: 'cell-2', epoch: before + 1 });
  assert.deepEqual(payOf(map, 'cell-2'), { prefix: '/pay/', cell: 'cell-2', epoch: before + 1 });
  assert.equal(movesToDrive(map).length, 1, 'the source copy is still to be removed');
  map = withMoveCleaned(map, id, 6);
  assert.deepEqual(movesToDrive(map), []);
  // The record survives the map's JSON (a router, a new leader).
  assert.deepEqual(parseCellMap(JSON.parse(JSON.stringify(map))), map);
});

test('an abort before the flip unfences the source and leaves the namespace where it was', () => {
  let map = withMoveStarted(twoCells(), '/pay/', 'cell-2', 1);
  const id = map.moves?.[0]?.id as number;
  map = withMoveAdvanced(map, id, 'copying', {}, 2);
  map = withMoveAdvanced(map, id, 'catching-up', {}, 3);
  map = withMoveAborted(map, '/pay/', 'by request', 4);
  assert.deepEqual(map.namespaces.find((n) => n.prefix === '/pay/')?.cell, 'cell-1');
  assert.equal(tableOf(map, 'cell-1').namespaces.find((n) => n.prefix === '/pay/')?.fencedTo, undefined);
  assert.equal(map.moves?.[0]?.phase, 'aborted');
  assert.equal(movesToDrive(map).length, 1, 'the destination copy is still to be removed');
  // A mover that was mid-step loses its compare-and-set.
  assert.throws(() => withMoveAdvanced(map, id, 'fenced', {}, 5), /is aborted/);
});

test('moves are refused for the root, a second open move, an unknown cell; one with nested namespaces is not', () => {
  const map = twoCells();
  assert.throws(() => withMoveStarted(map, '/', 'cell-2', 1), /root/);
  const withNested = withMoveStarted(withNamespace(map, '/pay/eu/', 'cell-1'), '/pay/', 'cell-2', 1);
  assert.equal(withNested.moves?.at(-1)?.prefix, '/pay/');
  assert.equal(withNested.namespaces.find((n) => n.prefix === '/pay/eu/')?.cell, 'cell-1', 'the nested one stays');
  assert.throws(() => withMoveStarted(withNested, '/pay/eu/', 'cell-2', 2), /open/, 'nor moves while its parent moves');
  assert.throws(() => withMoveStarted(map, '/pay/', 'cell-3', 1), /no cell cell-3/);
  assert.throws(() => withMoveStarted(map, '/pay/', 'cell-1', 1), /already/);
  const moving = withMoveStarted(map, '/pay/', 'cell-2', 1);
  assert.throws(() => withMoveStarted(moving, '/pay/', 'cell-2', 2), /open/);
  assert.throws(() => withNamespace(moving, '/pay/eu/', 'cell-1'), /is moving/);
  // Released, its old copy not cleared yet: still no namespace created in it (that clear leaves
  // out the nested namespaces the mover knew of).
  let done = moving;
  const id = done.moves?.at(-1)?.id as number;
  for (const [from, fields] of [['copying', {}], ['catching-up', {}], ['fenced', { fenceRevision: 9 }], ['flipped', {}]] as const) {
    done = withMoveAdvanced(done, id, from, fields, 3);
  }
  assert.equal(done.moves?.at(-1)?.phase, 'released');
  assert.throws(() => withNamespace(done, '/pay/eu/', 'cell-2'), /is moving/);
  assert.equal(withNamespace(withMoveCleaned(done, id, 4), '/pay/eu/', 'cell-2').namespaces.some((n) => n.prefix === '/pay/eu/'), true);
});

/** Moves `/pay/` to `to` through every phase, the destination's dedup clock read as `clockMs`. */
function moved(map: CellMap, to: string, clockMs: number | undefined, nowMs: number): CellMap {
  let next = withMoveStarted(map, '/pay/', to, nowMs);
  const id = next.epoch;
  next = withMoveAdvanced(next, id, 'copying', {}, nowMs);
  next = withMoveAdvanced(next, id, 'catching-up', clockMs === undefined ? {} : { destinationClockMs: clockMs }, nowMs);
  next = withMoveAdvanced(next, id, 'fenced', { fenceRevision: 10 }, nowMs);
  next = withMoveAdvanced(next, id, 'flipped', {}, nowMs);
  return withMoveCleaned(next, id, nowMs);
}

test('a move back to the cell a namespace came from lists its Request-ID records from the clock read before the fence; any other does not', () => {
  let map = withCell(twoCells(), { id: 'cell-3', endpoints: ['http://c:1'] });
  map = moved(map, 'cell-2', 5_000, 1);
  const pay = () => map.namespaces.find((n) => n.prefix === '/pay/');
  assert.deepEqual(pay()?.arrivedFrom, { cell: 'cell-1', requestsFromMs: 5_000 });
  // It survives the map's JSON, and the ownership tables do not carry it.
  assert.deepEqual(parseCellMap(JSON.parse(JSON.stringify(map))), map);
  assert.deepEqual(payOf(map, 'cell-2'), { prefix: '/pay/', cell: 'cell-2', epoch: pay()?.epoch });
  // An aborted move leaves the assignment, so the arrival stays.
  map = withMoveStarted(map, '/pay/', 'cell-3', 2);
  map = withMoveAborted(map, '/pay/', 'by request', 3);
  assert.deepEqual(pay()?.arrivedFrom, { cell: 'cell-1', requestsFromMs: 5_000 });
  // Back to cell-1: from the stamp; to cell-3: every record.
  const back = withMoveStarted(map, '/pay/', 'cell-1', 4);
  assert.equal(back.moves?.at(-1)?.requestsFromMs, 5_000);
  assert.equal(withMoveStarted(map, '/pay/', 'cell-3', 4).moves?.at(-1)?.requestsFromMs, undefined);
  // A move with no clock read (an older destination build) leaves none: the next move lists all.
  map = moved(map, 'cell-3', undefined, 5);
  assert.equal(pay()?.arrivedFrom, undefined);
  assert.equal(withMoveStarted(map, '/pay/', 'cell-2', 6).moves?.at(-1)?.requestsFromMs, undefined);
  // A bad arrival off the wire is dropped, not trusted.
  const raw = JSON.parse(JSON.stringify(moved(map, 'cell-1', 7_000, 7))) as { namespaces: { prefix: string; arrivedFrom?: unknown }[] };
  for (const n of raw.namespaces) if (n.prefix === '/pay/') n.arrivedFrom = { cell: 'cell-3', requestsFromMs: -1 };
  assert.equal(parseCellMap(raw).namespaces.find((n) => n.prefix === '/pay/')?.arrivedFrom, undefined);
});
