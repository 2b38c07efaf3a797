// The boot-time election clock advance (RaftApi.advanceElectionClock, etcd's initial election tick
// advance): a starting cell elects within the timeout's random part, and a restarted member that
// advances its clock beside a live leader does not unseat it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultRaftConfig } from '../../../src/raft/index.js';
import { TestCluster } from './harness.js';

const electionTicks = defaultRaftConfig.electionTicks;

function ticksToFirstLeader(cluster: TestCluster): number {
  for (let ticks = 1; ticks <= 4 * electionTicks; ticks++) {
    cluster.tickAll(1);
    if ([1, 2, 3].some((id) => cluster.member(id).raft.status().role === 'leader')) return ticks;
  }
  throw new Error('no leader');
}

test('advanced at boot, a new cell elects within one election timeout; without, never before one', () => {
  for (let seed = 1n; seed <= 30n; seed++) {
    const plain = new TestCluster([1, 2, 3], { seed });
    assert.ok(ticksToFirstLeader(plain) >= electionTicks, 'a whole timeout first');
    const advanced = new TestCluster([1, 2, 3], { seed });
    for (const id of [1, 2, 3]) advanced.member(id).raft.advanceElectionClock();
    assert.ok(ticksToFirstLeader(advanced) <= electionTicks, `seed ${seed}: within the random part`);
  }
});

test('a member that starts late and advances its clock beside a live leader does not unseat it (pre-vote)', () => {
  for (let seed = 1n; seed <= 20n; seed++) {
    const cluster = new TestCluster([1, 2, 3], { seed });
    // Member 3 "has not started": cut off and never ticked while 1 and 2 elect a leader.
    cluster.isolate(3);
    cluster.electLeader(1);
    const term = cluster.member(1).raft.status().term;
    cluster.heal();
    assert.equal(cluster.member(3).raft.status().leader, 0, 'member 3 starts knowing no leader');
    cluster.member(3).raft.advanceElectionClock();
    cluster.tickAll(2 * electionTicks);
    assert.equal(cluster.leader(), 1, `seed ${seed}`);
    assert.equal(cluster.member(1).raft.status().term, term, `seed ${seed}: no new term`);
    assert.equal(cluster.member(3).raft.status().leader, 1, `seed ${seed}: member 3 follows`);
  }
});

test('a leader, or a follower that knows its leader, keeps its clock', () => {
  const cluster = new TestCluster([1, 2, 3]);
  cluster.electLeader(1);
  for (const id of [1, 2]) cluster.member(id).raft.advanceElectionClock();
  cluster.tickAll(electionTicks - 1);
  cluster.stabilize();
  assert.equal(cluster.leader(), 1);
  assert.equal(cluster.member(2).raft.status().leader, 1);
});
