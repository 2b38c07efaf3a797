// The follower's half of replication: merging the leader's entries after a matching
// (prevIndex, prevTerm), learning the commit index, installing snapshots, and forwarding
// proposals to the leader.
import { assert } from '../base/assert.js';
import type { MessageOf, NodeState } from './node-state.js';
import { noMember, Role, type MemberId } from './types.js';

export function handleAppend(node: NodeState, m: MessageOf<'append'>): void {
  assert(node.role === Role.follower && m.term === node.term, 'appends of this term reach a follower');
  assert(node.leader === m.from, 'a follower appends from the leader it knows');
  if (m.prevIndex < node.log.committedIndex) {
    // Already committed here: answer with the commit index so the leader skips ahead.
    respondAppend(node, m.from, node.log.committedIndex);
    return;
  }
  if (node.config.bugs?.appendPastGap === true && m.prevIndex > node.log.lastIndex()) {
    // Test-only bug: no check that the entries before prevIndex are here. The log cannot hold a
    // gap, so the entries are not stored, but the follower answers as if it had appended them.
    respondAppend(node, m.from, m.prevIndex + m.entries.length);
    return;
  }
  if (node.log.matchTerm(m.prevIndex, m.prevTerm)) {
    const committedBefore = node.log.committedIndex;
    const lastNew = node.log.merge(m.prevIndex, m.entries);
    assert(lastNew <= node.log.lastIndex(), 'merged entries are in the log');
    const last = m.entries[m.entries.length - 1];
    if (last !== undefined) assert(node.log.matchTerm(last.index, last.term), 'the log holds the leader\'s entries');
    // Only what is known to match the leader's log may be committed here.
    node.log.commitTo(Math.min(m.commit, lastNew));
    assert(node.log.committedIndex >= committedBefore, 'the commit index never goes back');
    respondAppend(node, m.from, lastNew);
    return;
  }
  // A committed entry matches every later leader's log (Leader Completeness): the mismatch is above it.
  assert(!node.invariantsHold || m.prevIndex > node.log.committedIndex, 'a follower never rejects at a committed index');
  const hint = node.log.findConflictByTerm(Math.min(m.prevIndex, node.log.lastIndex()), m.prevTerm);
  assert(hint <= m.prevIndex, 'the hint is below the rejected index');
  node.send({
    type: 'appendResponse',
    to: m.from,
    index: m.prevIndex,
    reject: true,
    rejectHint: hint,
    hintTerm: node.log.term(hint) ?? 0,
  });
}

export function respondAppend(node: NodeState, to: MemberId, index: number): void {
  node.send({ type: 'appendResponse', to, index, reject: false, rejectHint: 0, hintTerm: 0 });
}

export function handleHeartbeat(node: NodeState, m: MessageOf<'heartbeat'>): void {
  assert(node.role === Role.follower && m.term === node.term, 'heartbeats of this term reach a follower');
  // The leader sends min(our match, its commit), so everything up to it matches its log.
  node.log.commitTo(Math.min(m.commit, node.log.lastIndex()));
  assert(node.leader === m.from, 'a follower takes the contact view of the leader it knows');
  node.leaderContact = { leader: m.from, term: m.term, members: m.contact, ticksSinceHeartbeat: 0 };
  node.send({ type: 'heartbeatResponse', to: m.from, readRound: m.readRound });
}

export function handleSnapshot(node: NodeState, m: MessageOf<'snapshot'>): void {
  assert(node.role === Role.follower && m.term === node.term, 'snapshots of this term reach a follower');
  const meta = m.snapshot.meta;
  if (meta.index <= node.log.committedIndex) {
    respondAppend(node, m.from, node.log.committedIndex);
    return;
  }
  if (node.log.matchTerm(meta.index, meta.term)) {
    // We already have the entries: just learn that they are committed.
    node.log.commitTo(meta.index);
    respondAppend(node, m.from, node.log.committedIndex);
    return;
  }
  node.log.restore(meta);
  node.snapshot = m.snapshot;
  node.snapshotToPersist = m.snapshot;
  node.confState = meta.confState;
  node.confHistory = [{ index: meta.index, confState: meta.confState }];
  assert(node.log.committedIndex === meta.index && node.log.appliedIndex === meta.index, 'a restored snapshot is committed and applied');
  respondAppend(node, m.from, meta.index);
}

/** RaftApi.forwardProposal on a follower: queued for the leader with the next Ready. */
export function flushForwardedProposals(node: NodeState): void {
  if (node.proposalsToForward.length === 0) return;
  if (node.role === Role.follower && node.leader !== noMember) {
    node.send({ type: 'propose', to: node.leader, commands: node.proposalsToForward });
  }
  // Otherwise they are dropped: the proposer's wait times out and the client retries.
  node.proposalsToForward = [];
}
