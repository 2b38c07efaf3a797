// Scenario tests of the Raft core on a small synchronous network: elections with PreVote and
// CheckQuorum, replication, batched ReadIndex, leader transfer, membership and snapshots. They
// check what users see (who leads, what every member applied), not internal calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntryType, type RaftMessage } from '../../../src/raft/index.js';
import { TestCluster, encode } from './harness.js';

test('three members elect one leader and apply the same entries', () => {
  const cluster = new TestCluster([1, 2, 3]);
  cluster.electLeader(1);
  assert.equal(cluster.leader(), 1);
  for (let i = 0; i < 10; i++) assert.ok(cluster.member(1).raft.propose(encode(`v${i}`)).ok);
  cluster.stabilize();
  cluster.tickAll(2); // heartbeats carry the final commit index to followers
  const expected = Array.from({ length: 10 }, (_, i) => `v${i}`);
  for (const id of [1, 2, 3]) assert.deepEqual(cluster.appliedData(id), expected);
});

test('followers refuse proposals and name the leader', () => {
  const cluster = new TestCluster([1, 2, 3]);
  cluster.electLeader(2);
  const result = cluster.member(1).raft.propose(encode('x'));
  assert.deepEqual(result, { ok: false, reason: 'notLeader', leader: 2 });
});

test('elections happen by timeout alone', () => {
  const cluster = new TestCluster([1, 2, 3], { seed: 7n });
  cluster.tickAll(40);
  const leaders = [1, 2, 3].filter((id) => cluster.member(id).raft.status().role === 'leader');
  assert.equal(leaders.length, 1);
});

test('an isolated leader steps down (CheckQuorum) and does not disrupt on return (PreVote)', () => {
  const cluster = new TestCluster([1, 2, 3]);
  cluster.electLeader(1);
  cluster.isolate(1);
  cluster.tickAll(40);
  assert.notEqual(cluster.member(1).raft.status().role, 'leader');
  const newLeader = cluster.leader();
  assert.ok(newLeader === 2 || newLeader === 3);
  const term = cluster.member(newLeader).raft.status().term;
  // The old leader, cut off, keeps timing out; pre-votes keep its term from rising.
  const isolatedTerm = cluster.member(1).raft.status().term;
  cluster.tickAll(60);
  assert.equal(cluster.member(1).raft.status().term, isolatedTerm);
  cluster.heal();
  cluster.tickAll(5);
  assert.equal(cluster.leader(), newLeader);
  assert.equal(cluster.member(newLeader).raft.status().term, term);
});

test('with PreVote and CheckQuorum off, a member whose term ran ahead answers a leader of an older term with its term', () => {
  // Plain sweep seed 206915: a member with a stale configuration campaigns only to peers that left,
  // so its vote requests never carry its term to the leader; answering the leader's heartbeat is
  // the one way the leader learns it, steps down, and the member can take a leader's entries again.
  const cluster = new TestCluster([1, 2, 3], { config: { preVote: false, checkQuorum: false } });
  cluster.electLeader(1);
  cluster.isolate(3);
  cluster.tickAll(60); // 3 campaigns alone: its term runs ahead
  const leaderTerm = cluster.member(1).raft.status().term;
  const aheadTerm = cluster.member(3).raft.status().term;
  assert.ok(aheadTerm > leaderTerm, `${aheadTerm} > ${leaderTerm}`);
  cluster.heal();
  cluster.member(1).raft.tick(); // the leader's next heartbeat round
  cluster.member(1).raft.tick();
  cluster.member(1).raft.tick();
  const sentBefore = cluster.sent.length;
  cluster.stabilize();
  const answers = cluster.sent.slice(sentBefore).filter((m) => m.from === 3 && m.to === 1 && m.type === 'appendResponse');
  assert.ok(answers.some((m) => m.term === aheadTerm), 'member 3 told the leader its term');
  assert.notEqual(cluster.member(1).raft.status().role, 'leader', 'the leader of the older term stepped down');
});

test('a vote request of a newer term that is refused does not restart the election timer (PreVote off)', () => {
  // Plain sweep seeds 533324, 563707: stale members campaigning over and over (PreVote off) moved
  // the up-to-date member's term forward and, before the fix, restarted its election timer each
  // time, so the only member that could win never timed out and the cell had no leader. Raft's
  // Figure 2: only a current leader's message or a granted vote restarts the timeout.
  const cluster = new TestCluster([1, 2, 3], { config: { preVote: false, checkQuorum: false } });
  cluster.electLeader(1);
  cluster.isolate(3);
  cluster.member(1).raft.propose(encode('a')); // 3 misses it: its log is behind
  cluster.stabilize();
  cluster.heal();
  cluster.isolate(1); // the leader is gone; 2 is the only member that can win
  for (let i = 0; i < 9; i++) {
    cluster.member(2).raft.tick(); // short of the smallest timeout (10 ticks)
    cluster.stabilize();
  }
  assert.equal(cluster.member(2).raft.status().role, 'follower');
  cluster.member(3).raft.campaign(); // stale: 2 refuses, but takes the newer term
  cluster.stabilize();
  const staleTerm = cluster.member(3).raft.status().term;
  assert.equal(cluster.member(2).raft.status().term, staleTerm, '2 moved to the stale candidate\'s term');
  assert.equal(cluster.member(2).raft.status().vote, 0, 'and refused its vote');
  for (let i = 0; i < 10; i++) {
    cluster.member(2).raft.tick(); // 19 ticks since the leader's last word: the largest timeout
    cluster.stabilize();
  }
  assert.equal(cluster.leader(), 2, 'the up-to-date member campaigned on its own timeout and won');
  assert.ok(cluster.member(2).raft.status().term > staleTerm);
});

test('ReadIndex: many reads share one quorum round', () => {
  const cluster = new TestCluster([1, 2, 3]);
  cluster.electLeader(1);
  cluster.member(1).raft.propose(encode('a'));
  cluster.stabilize();
  const before = cluster.sent.filter((m) => m.type === 'heartbeat').length;
  for (let context = 1; context <= 100; context++) cluster.member(1).raft.readIndex(context);
  cluster.stabilize();
  const heartbeats = cluster.sent.filter((m) => m.type === 'heartbeat').length - before;
  assert.equal(cluster.member(1).readStates.length, 100);
  assert.ok(heartbeats <= 4, `one or two rounds to two followers, saw ${heartbeats} heartbeats`);
  const commit = cluster.member(1).raft.status().commitIndex;
  for (const read of cluster.member(1).readStates) assert.equal(read.index, commit);
});

test('ReadIndex from a follower is answered by the leader', () => {
  const cluster = new TestCluster([1, 2, 3]);
  cluster.electLeader(1);
  cluster.member(1).raft.propose(encode('a'));
  cluster.stabilize();
  cluster.member(3).raft.readIndex(42);
  cluster.stabilize();
  assert.deepEqual(cluster.member(3).readStates, [{ context: 42, index: cluster.member(1).raft.status().commitIndex }]);
});

test('an isolated leader cannot answer a linearizable read', () => {
  const cluster = new TestCluster([1, 2, 3]);
  cluster.electLeader(1);
  cluster.isolate(1);
  cluster.member(1).raft.readIndex(9);
  cluster.tickAll(30);
  assert.deepEqual(cluster.member(1).readStates, []);
  assert.deepEqual(cluster.member(1).droppedReads, [9]);
});

test('leader transfer hands leadership to the target', () => {
  const cluster = new TestCluster([1, 2, 3]);
  cluster.electLeader(1);
  cluster.member(1).raft.propose(encode('a'));
  cluster.stabilize();
  cluster.member(1).raft.transferLeadership(3);
  cluster.stabilize();
  assert.equal(cluster.leader(), 3);
  assert.ok(cluster.member(3).raft.propose(encode('b')).ok);
});

test('membership: add a learner, promote it, remove an old voter', () => {
  const cluster = new TestCluster([1, 2, 3], { extra: [4] });
  cluster.electLeader(1);
  const leader = cluster.member(1).raft;
  assert.ok(leader.proposeConfChange({ type: 'enterJoint', changes: [{ type: 'addLearner', id: 4 }] }).ok);
  cluster.stabilize();
  cluster.tickAll(3);
  assert.deepEqual(leader.status().confState, { voters: [1, 2, 3], votersOutgoing: [], learners: [4] });
  assert.ok(leader.propose(encode('x')).ok);
  cluster.stabilize();
  cluster.tickAll(2);
  assert.deepEqual(cluster.appliedData(4), ['x']);
  assert.ok(
    leader.proposeConfChange({ type: 'enterJoint', changes: [{ type: 'addVoter', id: 4 }, { type: 'remove', id: 2 }] }).ok,
  );
  // A second change is refused while the first is in flight.
  assert.deepEqual(
    leader.proposeConfChange({ type: 'enterJoint', changes: [{ type: 'remove', id: 3 }] }),
    { ok: false, reason: 'confChangePending', leader: 1 },
  );
  cluster.stabilize();
  cluster.tickAll(3);
  for (const id of [1, 3, 4]) {
    assert.deepEqual(cluster.member(id).raft.status().confState, { voters: [1, 3, 4], votersOutgoing: [], learners: [] });
  }
  cluster.isolate(2);
  assert.ok(leader.propose(encode('y')).ok);
  cluster.stabilize();
  cluster.tickAll(2);
  assert.deepEqual(cluster.appliedData(4), ['x', 'y']);
});

test('a member behind the compacted log catches up by snapshot', () => {
  const cluster = new TestCluster([1, 2, 3]);
  cluster.electLeader(1);
  cluster.isolate(3);
  for (let i = 0; i < 20; i++) cluster.member(1).raft.propose(encode(`v${i}`));
  cluster.stabilize();
  cluster.tickAll(2);
  const leader = cluster.member(1).raft;
  const snapshot = leader.compact(leader.status().appliedIndex, encode('state'));
  assert.equal(leader.status().firstIndex, snapshot.meta.index + 1);
  cluster.heal();
  cluster.tickAll(3);
  const snapshotsSent = cluster.sent.filter((m) => m.type === 'snapshot' && m.to === 3);
  assert.equal(snapshotsSent.length, 1);
  cluster.member(1).raft.reportSnapshot(3, true);
  leader.propose(encode('after'));
  cluster.stabilize();
  cluster.tickAll(2);
  assert.equal(cluster.member(3).raft.status().appliedIndex, leader.status().appliedIndex);
  assert.deepEqual(cluster.appliedData(3), ['after']);
});

test('a follower forwards proposals to the leader', () => {
  const cluster = new TestCluster([1, 2, 3]);
  cluster.electLeader(1);
  assert.equal(cluster.member(2).raft.forwardProposal(encode('from-2')), true);
  cluster.stabilize();
  cluster.tickAll(2);
  for (const id of [1, 2, 3]) assert.deepEqual(cluster.appliedData(id), ['from-2']);
});

test('forwarded commands that are not appended go back to the follower, and are never applied', () => {
  const cluster = new TestCluster([1, 2, 3]);
  cluster.electLeader(1);
  // A transfer to an unreachable member keeps the leader transferring: it appends nothing new.
  cluster.isolate(3);
  cluster.member(1).raft.transferLeadership(3);
  cluster.stabilize();
  assert.equal(cluster.member(2).raft.forwardProposal(encode('during-transfer')), true);
  cluster.stabilize();
  const refusals = (): { to: number; reason: string; commands: string[] }[] =>
    cluster.sent.flatMap((m) => (m.type === 'proposeRefused'
      ? [{ to: m.to, reason: m.reason, commands: m.commands.map((c) => new TextDecoder().decode(c)) }]
      : []));
  assert.deepEqual(refusals(), [{ to: 2, reason: 'transferring', commands: ['during-transfer'] }]);
  // A member that is not the leader refuses a propose sent to it (it is never stepped as a term).
  const follower = cluster.member(2).raft;
  const term = follower.status().term;
  cluster.member(3).raft.step({ type: 'propose', from: 2, to: 3, term: follower.status().term, commands: [encode('misrouted')] });
  follower.step({ type: 'proposeRefused', from: 3, to: 2, term: term + 5, reason: 'notLeader', commands: [] });
  assert.equal(follower.status().term, term, 'a refusal changes no term');
  cluster.heal();
  cluster.tickAll(30);
  assert.deepEqual(refusals().at(-1), { to: 2, reason: 'notLeader', commands: ['misrouted'] });
  for (const id of [1, 2, 3]) assert.ok(!cluster.appliedData(id).includes('during-transfer'));
});

test('the leader sends appends before its own write is durable but counts itself only after', () => {
  const cluster = new TestCluster([1, 2, 3]);
  cluster.electLeader(1);
  cluster.isolate(3);
  const leader = cluster.member(1).raft;
  const follower = cluster.member(2).raft;
  const before = leader.status().commitIndex;
  leader.propose(encode('x'));
  const ready = leader.ready();
  assert.ok(ready.entries.length === 1, 'the entry is handed out for persisting');
  const appends = ready.appendMessages.filter((m) => m.type === 'append' && m.to === 2);
  assert.equal(appends.length, 1, 'the append to a follower may leave before the leader persisted');
  for (const m of appends) follower.step(m);
  const followerReady = follower.ready();
  follower.advance(followerReady);
  for (const m of followerReady.messages) if (m.to === 1) leader.step(m);
  // One follower (of three) has it, the leader's own copy is not durable yet: not committed.
  assert.equal(leader.status().commitIndex, before);
  leader.advance(ready);
  assert.equal(leader.status().commitIndex, before + 1);
});

test('a leader elected while the configuration is joint leaves it (auto-leave after an election)', () => {
  const cluster = new TestCluster([1, 2, 3], { learners: [4] });
  cluster.electLeader(1);
  cluster.tickAll(2);
  const leader = cluster.member(1).raft;
  assert.ok(leader.proposeConfChange({ type: 'enterJoint', changes: [{ type: 'remove', id: 4 }] }).ok);
  // Member 1 replicates C_old,new and, on applying it, appends C_new; then only heartbeats get out
  // (they tell 2 and 3 that C_old,new committed, so they apply it as followers) before 1 is cut off.
  let leaveAppended = false;
  for (let round = 0; round < 50 && !leaveAppended; round++) {
    const inFlight: RaftMessage[] = [];
    for (const [id, member] of cluster.members) {
      while (member.raft.hasReady()) {
        const ready = member.raft.ready();
        if (id === 1 && ready.entries.some((e) => e.type === EntryType.config) && leader.status().confState.votersOutgoing.length > 0) {
          leaveAppended = true;
        }
        inFlight.push(...(leaveAppended && id === 1 ? [] : [...ready.appendMessages, ...ready.messages]));
        member.raft.advance(ready);
      }
    }
    for (const message of inFlight) cluster.member(message.to).raft.step(message);
  }
  assert.ok(leaveAppended, 'member 1 applied C_old,new and appended C_new');
  leader.tick();
  while (leader.hasReady()) {
    const ready = leader.ready();
    for (const message of [...ready.appendMessages, ...ready.messages]) {
      if (message.type === 'heartbeat') cluster.member(message.to).raft.step(message);
    }
    leader.advance(ready);
  }
  cluster.isolate(1);
  cluster.stabilize();
  assert.deepEqual(cluster.member(2).raft.status().confState.votersOutgoing, [1, 2, 3], 'member 2 applied C_old,new');
  cluster.tickAll(40); // 2 and 3 elect a leader between them
  const next = cluster.leader();
  assert.ok(next === 2 || next === 3, `a new leader (${next})`);
  for (const id of [2, 3]) {
    assert.deepEqual(cluster.member(id).raft.status().confState, { voters: [1, 2, 3], votersOutgoing: [], learners: [] });
  }
  // And the cell takes changes again.
  assert.ok(cluster.member(next).raft.proposeConfChange({ type: 'enterJoint', changes: [{ type: 'remove', id: 1 }] }).ok);
});
