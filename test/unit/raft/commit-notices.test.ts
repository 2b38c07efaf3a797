// Deferred commit notices (RaftConfig.deferCommitNotices): when the commit index moves with no new
// entry to send, a follower hears of it at once only if entries it forwarded are among those just
// committed (its clients wait for the answer); the others learn it from the next append, a
// heartbeat, or the notices the driver asks for after its short delay. Without the option every
// follower hears of every commit at once, as in etcd.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MemberId } from '../../../src/raft/index.js';
import { TestCluster, encode } from './harness.js';

/** Delivers everything until quiet (the harness's stabilize); returns the commit-only appends (no entries) sent, by receiver. */
function settle(cluster: TestCluster): Map<MemberId, number> {
  const from = cluster.sent.length;
  cluster.stabilize();
  const notices = new Map<MemberId, number>();
  for (const message of cluster.sent.slice(from)) {
    if (message.type === 'append' && message.entries.length === 0) notices.set(message.to, (notices.get(message.to) ?? 0) + 1);
  }
  return notices;
}

/** A 3-member cell led by 1, with one write of 1's own committed and everything delivered. */
function cellWithOneWrite(deferCommitNotices: boolean): { cluster: TestCluster; notices: Map<MemberId, number> } {
  const cluster = new TestCluster([1, 2, 3], { config: { deferCommitNotices } });
  cluster.electLeader(1);
  cluster.tickAll(2);
  assert.ok(cluster.member(1).raft.propose(encode('a')).ok);
  return { cluster, notices: settle(cluster) };
}

const commitOf = (cluster: TestCluster, id: MemberId): number => cluster.member(id).raft.status().commitIndex;

for (const deferred of [false, true]) {
  test(`a leader's own write: followers ${deferred ? 'are owed the commit until the driver asks' : 'hear the commit at once'}`, () => {
    const { cluster, notices } = cellWithOneWrite(deferred);
    const leaderCommit = commitOf(cluster, 1);
    if (!deferred) {
      assert.equal(commitOf(cluster, 2), leaderCommit);
      assert.equal(commitOf(cluster, 3), leaderCommit);
      assert.equal(cluster.member(1).raft.hasOwedCommitNotices(), false);
      return;
    }
    assert.equal(notices.size, 0, 'no commit-only append left');
    assert.ok(commitOf(cluster, 2) < leaderCommit && commitOf(cluster, 3) < leaderCommit, 'the followers lag');
    assert.equal(cluster.member(1).raft.hasOwedCommitNotices(), true);
    // The driver's delay runs out: one notice each, and nothing owed after.
    cluster.member(1).raft.sendOwedCommitNotices();
    const sent = settle(cluster);
    assert.deepEqual([sent.get(2), sent.get(3)], [1, 1]);
    assert.equal(commitOf(cluster, 2), leaderCommit);
    assert.equal(commitOf(cluster, 3), leaderCommit);
    assert.equal(cluster.member(1).raft.hasOwedCommitNotices(), false);
    // Asking again sends nothing: they are told.
    cluster.member(1).raft.sendOwedCommitNotices();
    assert.equal(settle(cluster).size, 0);
  });
}

test('deferred: the next append carries the owed commit, and no notice follows it', () => {
  const { cluster } = cellWithOneWrite(true);
  const firstCommit = commitOf(cluster, 1);
  assert.ok(cluster.member(1).raft.propose(encode('b')).ok);
  // Deliver only until the followers hold 'b': its append carried the commit of 'a'.
  const leader = cluster.member(1).raft;
  const ready = leader.ready();
  leader.advance(ready);
  for (const message of ready.appendMessages) cluster.members.get(message.to)?.raft.step(message);
  assert.equal(commitOf(cluster, 2), firstCommit);
  assert.equal(commitOf(cluster, 3), firstCommit);
  assert.equal(leader.hasOwedCommitNotices(), false, 'the append carried the commit: nothing owed');
  settle(cluster);
  // 'b' committed in turn: owed again, until the driver asks or the next append.
  assert.equal(leader.hasOwedCommitNotices(), true);
});

test('deferred: a follower whose forwarded write commits hears at once; the other one is owed', () => {
  const cluster = new TestCluster([1, 2, 3], { config: { deferCommitNotices: true } });
  cluster.electLeader(1);
  cluster.tickAll(2);
  assert.ok(cluster.member(2).raft.forwardProposal(encode('from-2')));
  const notices = settle(cluster);
  const leaderCommit = commitOf(cluster, 1);
  const applied = cluster.member(2).applied.map((e) => new TextDecoder().decode(e.data));
  assert.ok(applied.includes('from-2'), 'the forwarding follower applied its write without waiting');
  assert.equal(commitOf(cluster, 2), leaderCommit);
  assert.equal(notices.get(2), 1);
  assert.equal(notices.get(3), undefined);
  assert.ok(commitOf(cluster, 3) < leaderCommit, 'the other follower is owed the commit');
  assert.equal(cluster.member(1).raft.hasOwedCommitNotices(), true);
});

test('deferred: a heartbeat tells a caught-up follower the commit, so nothing is owed after it', () => {
  const { cluster } = cellWithOneWrite(true);
  assert.equal(cluster.member(1).raft.hasOwedCommitNotices(), true);
  cluster.member(1).raft.tick(); // heartbeatTicks 1: the leader's heartbeat round
  settle(cluster);
  assert.equal(cluster.member(1).raft.hasOwedCommitNotices(), false);
  assert.equal(commitOf(cluster, 2), commitOf(cluster, 1));
  assert.equal(commitOf(cluster, 3), commitOf(cluster, 1));
});

test('deferred: a leader that steps down owes nothing', () => {
  const { cluster } = cellWithOneWrite(true);
  assert.equal(cluster.member(1).raft.hasOwedCommitNotices(), true);
  cluster.member(1).raft.transferLeadership(2);
  settle(cluster);
  assert.equal(cluster.member(2).raft.status().role, 'leader');
  assert.equal(cluster.member(1).raft.status().role, 'follower');
  assert.equal(cluster.member(1).raft.hasOwedCommitNotices(), false);
  cluster.member(1).raft.sendOwedCommitNotices();
  assert.equal(cluster.member(1).raft.hasReady(), false);
});
