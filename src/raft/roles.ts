// Role transitions. Each asserts where it may come from; becoming leader also resets the
// leader-only state and appends the no-op that lets it commit what it inherited (Figure 8).
import { assert } from '../base/assert.js';
import { allMembers } from './quorum.js';
import { failRead } from './reads.js';
import type { NodeState } from './node-state.js';
import { EntryType, noMember, Role, type MemberId } from './types.js';

const emptyData = new Uint8Array(0);

/**
 * `resetTimer` false keeps the election clock running: a vote request of a newer term moves this
 * node to that term but is neither a leader's message nor a granted vote (Raft, Figure 2), so it
 * must not postpone this node's own campaign. Otherwise, with PreVote off, stale candidates that
 * can never win keep the up-to-date members from ever timing out (sim seeds 533324, 563707).
 */
export function becomeFollower(node: NodeState, term: number, leader: MemberId, resetTimer = true): void {
  leaveLeadership(node);
  node.setTerm(term);
  node.role = Role.follower;
  node.leader = leader;
  if (resetTimer) node.resetElectionTimer();
}

export function becomePreCandidate(node: NodeState): void {
  assert(node.role !== Role.leader, 'a leader never becomes a pre-candidate');
  node.role = Role.preCandidate;
  node.leader = noMember;
  node.votes = new Map();
  node.resetElectionTimer();
}

export function becomeCandidate(node: NodeState): void {
  assert(node.role !== Role.leader, 'a leader never becomes a candidate');
  const term = node.term;
  node.setTerm(term + 1);
  node.setVote(node.id);
  assert(node.term === term + 1, 'a candidate campaigns in a new term');
  node.role = Role.candidate;
  node.leader = noMember;
  node.votes = new Map();
  node.resetElectionTimer();
}

export function becomeLeader(node: NodeState): void {
  assert(node.role === Role.candidate, 'only a candidate becomes leader');
  assert(node.leaderTerm < node.term, 'a node becomes leader at most once per term');
  assert(node.vote === node.id, 'a leader voted for itself in its term');
  node.leaderTerm = node.term;
  node.role = Role.leader;
  node.leader = node.id;
  node.resetElectionTimer();
  node.heartbeatElapsed = 0;
  node.leadTransferee = noMember;
  node.uncommittedBytes = 0;
  node.progress = new Map();
  for (const id of allMembers(node.confState)) node.addProgress(id);
  const self = node.progress.get(node.id);
  if (self !== undefined) self.maybeUpdate(node.log.durableIndex);
  // No configuration change until everything this leader inherited has been applied.
  node.pendingConfIndex = node.log.lastIndex();
  // The no-op: committing an entry of its own term commits everything before it (Figure 8).
  assert(node.log.lastTerm() < node.term, 'no entry of a new leader\'s term exists before its no-op');
  node.log.appendNew({ index: node.log.lastIndex() + 1, term: node.term, type: EntryType.normal, data: emptyData });
  node.broadcastPending = true;
}

/** Whatever only a leader holds: its pending reads fail, its transfer and broadcast stop. */
export function leaveLeadership(node: NodeState): void {
  for (const read of node.reads.drain()) failRead(node, read.context, read.from);
  for (const read of node.readsAwaitingCommit) failRead(node, read.context, read.from);
  node.readsAwaitingCommit = [];
  node.leadTransferee = noMember;
  node.broadcastPending = false;
  node.commitOwed.clear();
  node.commitNoticeTo.clear();
  node.forwardedUpTo.clear();
}
