// The watch checker against a committed log: exact delivery is accepted (also for prefixes and a
// compacted error that was due); a gap, a duplicate, a reordering, an event from another key, a
// missing tail behind a progress revision, and a compacted error that was not due are rejected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkWatches, type CommittedEvent, type WatchRecord } from '../../../src/check/index.js';

const log: CommittedEvent[] = [
  { revision: 2, key: 'a', type: 'put', value: '1' },
  { revision: 3, key: 'b', type: 'put', value: '1' },
  { revision: 4, key: 'a', type: 'put', value: '2' },
  { revision: 5, key: 'ab', type: 'put', value: '1' },
  { revision: 6, key: 'a', type: 'delete', value: null },
  { revision: 7, key: 'a', type: 'put', value: '3' },
];
const onA = log.filter((e) => e.key === 'a');

function watch(received: CommittedEvent[], end: WatchRecord['end'], extra: Partial<WatchRecord> = {}): WatchRecord {
  return { id: 'w1', key: 'a', prefix: false, startRevision: 1, received, end, ...extra };
}

function kinds(record: WatchRecord): string[] {
  return checkWatches(log, [record]).violations.map((v) => v.kind);
}

test('exact delivery is accepted, for a key, a prefix and a later start', () => {
  assert.deepEqual(kinds(watch(onA, { type: 'open', progressRevision: 7 })), []);
  const prefix = log.filter((e) => e.key.startsWith('a'));
  assert.deepEqual(kinds(watch(prefix, { type: 'open', progressRevision: 7 }, { prefix: true })), []);
  const late = onA.filter((e) => e.revision >= 5);
  assert.deepEqual(kinds(watch(late, { type: 'open', progressRevision: 7 }, { startRevision: 5 })), []);
  // Caught up only through 4: the rest may still be on its way.
  assert.deepEqual(kinds(watch(onA.slice(0, 2), { type: 'open', progressRevision: 4 })), []);
});

test('gaps, duplicates, reorderings and foreign events are rejected with their kind', () => {
  const [e2, e4, e6, e7] = onA as [CommittedEvent, CommittedEvent, CommittedEvent, CommittedEvent];
  assert.deepEqual(kinds(watch([e2, e6, e7], { type: 'closed' })), ['gap']);
  assert.deepEqual(kinds(watch([e2, e4, e4, e6], { type: 'closed' })), ['duplicate']);
  assert.deepEqual(kinds(watch([e2, e6, e4], { type: 'closed' })), ['gap']);
  assert.deepEqual(kinds(watch([e2, e4, e2], { type: 'closed' })), ['duplicate']);
  const b = log[1]!;
  assert.deepEqual(kinds(watch([e2, b], { type: 'closed' })), ['wrong-key']);
  const forged = { ...e4, value: 'x' };
  assert.deepEqual(kinds(watch([e2, forged], { type: 'closed' })), ['not-committed']);
  const message = checkWatches(log, [watch([e2, e6, e7], { type: 'closed' })]).violations[0]!.message;
  assert.match(message, /watcher w1 on a from revision 1: event #1 is delete a@6, expected put a@4 "2"/);
});

test('a missing tail behind a progress revision is a gap', () => {
  const record = watch(onA.slice(0, 2), { type: 'open', progressRevision: 7 });
  assert.deepEqual(kinds(record), ['gap']);
  assert.match(checkWatches(log, [record]).violations[0]!.message, /never received 2 event\(s\), first delete a@6/);
  // Closed by a lost connection after a progress batch for 6: the delete at 6 was owed.
  assert.deepEqual(kinds(watch(onA.slice(0, 2), { type: 'closed', progressRevision: 6 })), ['gap']);
  assert.deepEqual(kinds(watch(onA.slice(0, 2), { type: 'closed', progressRevision: 5 })), []);
});

test('a compacted error must be due', () => {
  // Needed revision 1 next, compacted through 3: due.
  assert.deepEqual(kinds(watch([], { type: 'compacted', compactRevision: 3 })), []);
  // Had everything through 4, needed 5, compaction only reached 4: not due.
  assert.deepEqual(kinds(watch(onA.slice(0, 2), { type: 'compacted', compactRevision: 4 })), ['compacted-not-due']);
  assert.deepEqual(kinds(watch(onA.slice(0, 2), { type: 'compacted', compactRevision: 6 })), []);
});
