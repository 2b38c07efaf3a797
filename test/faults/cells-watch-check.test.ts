// The watch checker across cells (cells-watch-check.ts) against small histories of one namespace
// moved from cell-1 to cell-2 (fence at revision 6, the destination's revisions above it): the
// clean watch passes, and each way a watch can be wrong (a gap, a duplicate, a revision that goes
// back across the move, an order against real time, a refused write, an unknown write seen by one
// watcher only) is reported with its kind. These are the checker's teeth; the fault run's
// `--watch-teeth drop|dup` shows the same through real watchers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KvOperation, OperationRecord } from '../../src/check/index.js';
import { checkNamespaceWatches, type CellEvent, type NamespaceWatch } from './cells-watch-check.js';

let nextId = 0;
function write(key: string, value: string, invokeMs: number, completeMs: number, status: 'ok' | 'info' | 'fail' = 'ok'): OperationRecord<KvOperation> {
  return { id: nextId++, process: 1, operation: { type: 'write', key, value }, status, invokeMs, completeMs, result: status === 'ok' ? { type: 'write' } : null };
}
function read(key: string, value: string | null, at: number): OperationRecord<KvOperation> {
  return { id: nextId++, process: 2, operation: { type: 'read', key }, status: 'ok', invokeMs: at, completeMs: at + 1, result: { type: 'read', value } };
}
const event = (key: string, value: string, revision: number, cell: string): CellEvent => ({ key: `/faults/${key}`, value, revision, type: 'put', cell });
const keyOf = (key: string): string | null => (key.startsWith('/faults/a/k') ? key.slice('/faults/'.length) : null);

// Three writes on cell-1 (revisions 2, 4, 5; the fence at 6), two on cell-2 after the move (9, 10).
const records = [
  write('a/k0', 'v1', 0, 10),
  write('a/k1', 'v2', 20, 30),
  write('a/k0', 'v3', 40, 50),
  write('a/k1', 'v4', 100, 110),
  write('a/k0', 'v5', 120, 130),
];
const history = [
  event('a/ready', 'ready', 1, 'cell-1'),
  event('a/k0', 'v1', 2, 'cell-1'),
  event('a/k1', 'v2', 4, 'cell-1'),
  event('a/k0', 'v3', 5, 'cell-1'),
  event('a/k1', 'v4', 9, 'cell-2'),
  event('a/k0', 'v5', 10, 'cell-2'),
];
const finals = new Map([['a/k0', 'v5'], ['a/k1', 'v4']]);

function check(watches: NamespaceWatch[], extra: OperationRecord<KvOperation>[] = [], finalValues = finals) {
  return checkNamespaceWatches({ watches, records: [...records, ...extra], finals: finalValues, keyOf });
}
const kinds = (report: ReturnType<typeof check>): string[] => report.violations.map((v) => v.kind);

test('a watch that follows the move with every event once, in order, passes', () => {
  const report = check([{ id: 'router', events: history, complete: true }, { id: 'direct', events: history, complete: true }]);
  assert.deepEqual(report.violations, []);
  assert.equal(report.eventsChecked, 10); // the setup's `ready` is not the workload's
  assert.equal(report.completeWatchers, 2);
});

test('a gap: an acknowledged write the complete watch never delivered', () => {
  const gap = history.filter((e) => e.value !== 'v3');
  assert.deepEqual(kinds(check([{ id: 'w', events: gap, complete: true }])), ['gap']);
  // An incomplete watch owes nothing it may not have reached yet.
  assert.deepEqual(kinds(check([{ id: 'w', events: gap, complete: false }])), []);
});

test('a duplicate: an event delivered again after a resume', () => {
  const dup = [...history.slice(0, 4), history[3] as CellEvent, ...history.slice(4)];
  assert.deepEqual(kinds(check([{ id: 'w', events: dup, complete: true }])), ['duplicate']);
});

test('a revision that goes back across the move (no floor above the fence) is out of order', () => {
  const noFloor = history.map((e) => (e.cell === 'cell-2' ? { ...e, revision: e.revision - 6 } : e));
  assert.deepEqual(kinds(check([{ id: 'w', events: noFloor, complete: true }])), ['out-of-order']);
});

test('an order against real time: a write acknowledged before an earlier event was written', () => {
  // v4 (acknowledged at 110) arrives before v3, whose write was invoked at 40: fine. But v5's write
  // was acknowledged at 130, so it cannot follow a write invoked at 200.
  const late = write('a/k1', 'v6', 200, 210);
  const events = [...history.slice(0, 5), event('a/k1', 'v6', 11, 'cell-2'), event('a/k0', 'v5', 12, 'cell-2')];
  assert.deepEqual(kinds(check([{ id: 'w', events, complete: true }], [late], new Map([['a/k0', 'v5'], ['a/k1', 'v6']]))), ['reorder']);
});

test('a write answered with a definite refusal must not be seen', () => {
  const refused = write('a/k1', 'x', 60, 70, 'fail');
  const events = [...history.slice(0, 4), event('a/k1', 'x', 6, 'cell-1'), ...history.slice(4)];
  assert.deepEqual(kinds(check([{ id: 'w', events, complete: true }], [refused])), ['refused-write']);
});

test('an unknown write may be there or not, but in every complete watch alike', () => {
  const unknown = write('a/k1', 'u', 60, 70, 'info');
  const withIt = [...history.slice(0, 4), event('a/k1', 'u', 6, 'cell-1'), ...history.slice(4)];
  assert.deepEqual(kinds(check([{ id: 'a', events: withIt, complete: true }, { id: 'b', events: withIt, complete: true }], [unknown])), []);
  assert.deepEqual(kinds(check([{ id: 'a', events: history, complete: true }, { id: 'b', events: history, complete: true }], [unknown])), []);
  assert.deepEqual(kinds(check([{ id: 'a', events: withIt, complete: true }, { id: 'b', events: history, complete: true }], [unknown])), ['disagree']);
  // Once a read saw it, it was committed: a complete watch without it has a gap.
  assert.deepEqual(kinds(check([{ id: 'a', events: history, complete: true }], [unknown, read('a/k1', 'u', 80)])), ['gap']);
});

test('a value no operation wrote, and a final value that is not the key\'s last event', () => {
  const invented = [...history, event('a/k0', 'zz', 11, 'cell-2')];
  assert.deepEqual(kinds(check([{ id: 'w', events: invented, complete: true }])), ['not-written']);
  assert.deepEqual(kinds(check([{ id: 'w', events: history, complete: true }], [], new Map([['a/k0', 'v3'], ['a/k1', 'v4']]))), ['final']);
});

test('a watch refused compacted reads the namespace again: its read is checked, and what comes after it', () => {
  // Disconnected during the move, refused compacted on cell-2, it read k0 = v3, k1 = v2 at 8 (read answered at 60 ms).
  const reread = { afterEvents: 2, revision: 8, values: new Map([['/faults/a/k0', 'v3'], ['/faults/a/k1', 'v2']]), readMs: 60 };
  const events = [...history.slice(0, 2), ...history.slice(4)];
  const clean = check([{ id: 'w', events, complete: true, snapshots: [reread] }, { id: 'direct', events: history, complete: true }]);
  assert.deepEqual(clean.violations, [], 'what it skipped before its read is no gap');
  assert.deepEqual([clean.completeWatchers, clean.rereadWatchers], [2, 1]);
  // A value the read saw that no operation wrote.
  const invented = { ...reread, values: new Map([['/faults/a/k0', 'v9']]) };
  assert.deepEqual(kinds(check([{ id: 'w', events, complete: true, snapshots: [invented] }])), ['read-not-written']);
  // A write acknowledged and invoked after the read must still be delivered.
  assert.deepEqual(kinds(check([{ id: 'w', events: events.filter((e) => e.value !== 'v5'), complete: true, snapshots: [reread] }])), ['gap', 'final']);
  // Events and the read in order must end at the final values.
  assert.deepEqual(kinds(check([{ id: 'w', events: events.slice(0, 3), complete: true, snapshots: [{ ...reread, readMs: 200 }] }])), ['final']);
});
