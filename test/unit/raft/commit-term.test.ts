// status().commitTerm (the term of the entry at the commit index), which /readyz uses: a new
// leader whose own commit index lags what the previous leader committed (and followers that
// learn the commit index from it) have commitTerm < term until an entry of the new term commits;
// only then does the commit index they know cover every earlier acknowledged write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RaftMessage } from '../../../src/raft/index.js';
import { TestCluster, encode } from './harness.js';

/** Like TestCluster.stabilize, with a filter: messages it returns true for are lost. */
function pump(cluster: TestCluster, lose: (message: RaftMessage) => boolean): void {
  for (let round = 0; round < 1_000; round++) {
    const out: RaftMessage[] = [];
    for (const member of cluster.members.values()) {
      while (member.raft.hasReady()) {
        const ready = member.raft.ready();
        member.applied.push(...ready.committed);
        out.push(...ready.appendMessages, ...ready.messages);
        member.raft.advance(ready);
      }
    }
    if (out.length === 0) return;
    for (const message of out) if (!lose(message)) cluster.members.get(message.to)?.raft.step(message);
  }
  throw new Error('did not settle');
}

test('a new leader and its follower have commitTerm < term until the new term commits an entry', () => {
  const cluster = new TestCluster([1, 2, 3]);
  cluster.electLeader(1);
  cluster.tickAll(2);
  for (const id of [1, 2, 3]) {
    const status = cluster.member(id).raft.status();
    assert.equal(status.commitTerm, status.term, `member ${id} knows a commit of the current term`);
  }
  // 1 commits 'a' (acknowledged to its client), but nobody hears the new commit index: 1 is cut
  // off as soon as the first acknowledgement reaches it.
  assert.ok(cluster.member(1).raft.propose(encode('a')).ok);
  let oneCut = false;
  pump(cluster, (m) => {
    if (oneCut && (m.from === 1 || m.to === 1)) return true;
    if (m.type === 'appendResponse' && m.to === 1) oneCut = true;
    return false;
  });
  const acknowledged = cluster.member(1).raft.status().commitIndex;
  assert.ok(cluster.member(2).raft.status().commitIndex < acknowledged, 'the followers lag');

  // 2 or 3 is elected by timeout; the acknowledgements of the new term's first entry are lost.
  const lostAll = (m: RaftMessage): boolean => m.from === 1 || m.to === 1;
  const lostAcks = (m: RaftMessage): boolean => lostAll(m) || m.type === 'appendResponse';
  for (let i = 0; i < 100 && ![2, 3].some((id) => cluster.member(id).raft.status().role === 'leader'); i++) {
    for (const id of [2, 3]) cluster.member(id).raft.tick();
    pump(cluster, lostAcks);
  }
  const leaderId = [2, 3].find((id) => cluster.member(id).raft.status().role === 'leader') as number;
  const followerId = leaderId === 2 ? 3 : 2;
  const leader = cluster.member(leaderId).raft.status();
  const follower = cluster.member(followerId).raft.status();
  assert.equal(follower.leader, leaderId);
  assert.ok(leader.commitIndex < acknowledged, 'the new leader does not know the commit yet');
  assert.ok(leader.commitTerm < leader.term);
  assert.ok(follower.commitTerm < follower.term);

  // The acknowledgements get through: the new term commits, and a heartbeat tells the follower.
  for (let i = 0; i < 5; i++) {
    for (const id of [2, 3]) cluster.member(id).raft.tick();
    pump(cluster, lostAll);
  }
  for (const id of [2, 3]) {
    const status = cluster.member(id).raft.status();
    assert.equal(status.commitTerm, status.term, `member ${id}`);
    assert.ok(status.commitIndex >= acknowledged, `member ${id}'s commit index covers the acknowledged write`);
  }
});
