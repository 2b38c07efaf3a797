// The member table travels with membership changes: an enterJoint entry's context is kept by the
// store (a leaveJoint or a change without one leaves it alone), survives a snapshot into a fresh
// store, and the directory merges it over the members a node started with, never forgetting the
// highest id given out (ids are never reused).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryEngine, MvccStore } from '../../../src/mvcc/index.js';
import { EntryType, encodeConfEntry, type ConfState, type Entry } from '../../../src/raft/index.js';
import { MemberDirectory, decodeMembersRecord, encodeMembersRecord } from '../../../src/membership/member-directory.js';

const n = (id: number, name: string) => ({ id, name, peerUrl: `http://127.0.0.1:${7100 + id}`, clientUrl: `http://127.0.0.1:${7000 + id}` });
const conf = (voters: number[], learners: number[] = [], outgoing: number[] = []): ConfState =>
  ({ voters, votersOutgoing: outgoing, learners });

function configEntry(index: number, data: Uint8Array): Entry {
  return { index, term: 1, type: EntryType.config, data };
}

test('the store keeps the context of the last enterJoint and hands it on in snapshots', () => {
  const store = new MvccStore(new MemoryEngine());
  assert.equal(store.membersRecord(), null);
  const record = encodeMembersRecord({ version: 1, maxMemberId: 4, members: [n(1, 'n1'), n(2, 'n2'), n(4, 'n4')] });
  store.applyBatch([
    configEntry(1, encodeConfEntry({ change: { type: 'enterJoint', changes: [{ type: 'addLearner', id: 4 }], context: record }, confState: conf([1, 2], [4], [1, 2]) })),
    configEntry(2, encodeConfEntry({ change: { type: 'leaveJoint' }, confState: conf([1, 2], [4]) })),
    configEntry(3, Uint8Array.of(1, 2, 3)), // not a configuration the server wrote: ignored
  ]);
  assert.equal(store.membersRecord(), record);
  const copy = new MvccStore(new MemoryEngine());
  copy.restore(store.snapshot().chunks);
  assert.equal(copy.membersRecord(), record);
  assert.equal(copy.hash(), store.hash());
});

test('the directory merges the replicated table over its start and keeps the highest id', () => {
  const directory = new MemberDirectory([n(1, 'n1'), n(2, 'n2'), n(3, 'n3')]);
  assert.equal(directory.maxMemberId, 3);
  const live = directory.live;
  assert.equal(directory.mergeRecordText(encodeMembersRecord({ version: 1, maxMemberId: 7, members: [n(1, 'n1'), n(5, 'n2')] })), true);
  assert.equal(directory.maxMemberId, 7);
  assert.equal(directory.get(5)?.name, 'n2');
  assert.equal(live.length, 4, 'the live list grew in place');
  assert.equal(directory.mergeRecordText('not json'), false);
  assert.equal(decodeMembersRecord('{"version":1,"maxMemberId":2,"members":[{"id":0,"name":"x"}]}'), null);
});

test('the table carries the changes made with a Request-ID; a damaged history is dropped, never the table', () => {
  const changes = [{ requestId: 'r1', kind: 'add' as const, member: n(4, 'n4'), role: 'learner' as const }];
  const text = encodeMembersRecord({ version: 1, maxMemberId: 4, members: [n(1, 'n1'), n(4, 'n4')], changes });
  assert.deepEqual(decodeMembersRecord(text)?.changes, changes);
  const damaged = JSON.stringify({ ...JSON.parse(text), changes: [{ requestId: 'r1', kind: 'rename', member: n(4, 'n4'), role: 'learner' }] });
  const decoded = decodeMembersRecord(damaged);
  assert.equal(decoded?.changes, undefined);
  assert.deepEqual(decoded?.members.map((m) => m.id), [1, 4]);
});
