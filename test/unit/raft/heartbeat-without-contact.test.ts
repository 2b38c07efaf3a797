// A heartbeat without a contact list, as a leader of peer protocol 2 sends it during a rolling
// upgrade (the transport decodes such a heartbeat with contact null): the follower keeps
// replicating and committing, and reports health as members did before protocol 3, only itself
// known; once the leader's heartbeats carry a view again, the follower reports that view.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultRaftConfig } from '../../../src/raft/index.js';
import { TestCluster, encode } from './harness.js';

test('heartbeats with contact null: followers commit and vouch only for themselves', () => {
  const cluster = new TestCluster([1, 2, 3]);
  cluster.rewrite = (m) => (m.type === 'heartbeat' ? { ...m, contact: null } : m);
  cluster.electLeader(1);
  for (let i = 0; i < 5; i++) assert.ok(cluster.member(1).raft.propose(encode(`v${i}`)).ok);
  cluster.stabilize();
  cluster.tickAll(defaultRaftConfig.electionTicks * 3); // many heartbeats, no election
  assert.equal(cluster.leader(), 1);
  const expected = Array.from({ length: 5 }, (_, i) => `v${i}`);
  for (const id of [1, 2, 3]) assert.deepEqual(cluster.appliedData(id), expected);
  assert.deepEqual(cluster.member(1).raft.status().inContact, [1, 2, 3], 'the leader hears everyone');
  assert.deepEqual(cluster.member(2).raft.status().inContact, [2]);
  assert.deepEqual(cluster.member(3).raft.status().inContact, [3]);
  // Cut off from the leader: an election timeout later it vouches for no one (as with a view).
  cluster.isolate(3);
  for (let i = 0; i < defaultRaftConfig.electionTicks; i++) cluster.member(3).raft.tick();
  assert.equal(cluster.member(3).raft.status().inContact, null);
  cluster.heal();
  // The leader upgraded: its heartbeats carry its view again and followers report it.
  cluster.rewrite = null;
  cluster.tickAll(defaultRaftConfig.electionTicks * 3);
  const leader = cluster.leader();
  const view = cluster.member(leader).raft.status().inContact;
  assert.deepEqual(view, [1, 2, 3]);
  for (const id of [1, 2, 3]) assert.deepEqual(cluster.member(id).raft.status().inContact, view);
});
