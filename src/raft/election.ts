// Elections: the term rules every message passes first, timeouts, PreVote (a campaign that
// changes no term until it could win), votes with the election restriction, and the leader's
// side of CheckQuorum (step down when cut off from a quorum).
import { assert } from '../base/assert.js';
import type { MessageOf, NodeState } from './node-state.js';
import { allVoters, isVoter, voteResult, VoteResult } from './quorum.js';
import { broadcastHeartbeat, refuseForwarded } from './replication-leader.js';
import { becomeCandidate, becomeFollower, becomeLeader, becomePreCandidate } from './roles.js';
import { EntryType, noMember, Role, type MemberId, type RaftMessage } from './types.js';

/** Term rules shared by every role. Returns false when the message is to be ignored. */
export function stepTerm(node: NodeState, m: RaftMessage): boolean {
  if (m.term > node.term) {
    if (m.type === 'vote' || m.type === 'preVote') {
      // A node that heard from a live leader recently ignores campaigns (it would only disrupt
      // a healthy cell), unless the leader itself asked for the transfer.
      const inLease =
        node.config.checkQuorum && node.leader !== noMember && node.electionElapsed < node.config.electionTicks;
      if (inLease && !m.transfer) return false;
    }
    if (m.type === 'preVote') return true; // a pre-vote never changes our term
    if (m.type === 'preVoteResponse' && !m.reject) return true; // echoes the term we would use
    const leader =
      m.type === 'append' || m.type === 'heartbeat' || m.type === 'snapshot' ? m.from : noMember;
    // A vote request restarts the timer only if granted (handleVoteRequest does that).
    becomeFollower(node, m.term, leader, m.type !== 'vote');
    assert(node.term === m.term, 'a newer term is adopted');
    return true;
  }
  if (m.term < node.term) {
    if (m.type === 'heartbeat' || m.type === 'append') {
      // Tell a deposed leader that a newer term exists, so it steps down. Also with PreVote and
      // CheckQuorum both off (etcd answers only with one of them on, counting on this node's
      // vote requests to carry its term): a member whose configuration is stale campaigns to
      // peers that left and never to the ones that joined, so the leader would never hear its
      // term and it would never take the leader's entries (plain sweep seed 206915: member 30,
      // promoted and then cut off, campaigned alone through term 229 while member 32 led term 43).
      node.send({ type: 'appendResponse', to: m.from, index: 0, reject: false, rejectHint: 0, hintTerm: 0 });
    } else if (m.type === 'preVote') {
      node.send({ type: 'preVoteResponse', to: m.from, reject: true });
    } else if (m.type === 'propose') {
      refuseForwarded(node, m.from, m.commands, 'notLeader');
    }
    return false;
  }
  return true;
}

export function tickElection(node: NodeState): void {
  assert(node.role !== Role.leader, 'a leader ticks heartbeats, not elections');
  node.electionElapsed++;
  node.leaderContact.ticksSinceHeartbeat++;
  if (isPromotable(node) && node.electionElapsed >= node.randomizedElectionTicks) {
    node.electionElapsed = 0;
    hup(node, false);
  }
}

function isPromotable(node: NodeState): boolean {
  return isVoter(node.confState, node.id) && node.recovery === null && node.regressed === null;
}

/** Start a campaign: a pre-vote first unless PreVote is off or the leader asked (transfer). */
export function hup(node: NodeState, transfer: boolean): void {
  if (node.role === Role.leader || !isPromotable(node)) return;
  // A committed membership change not yet applied could change who may vote: wait for it.
  for (let index = node.log.appliedIndex + 1; index <= node.log.committedIndex; index++) {
    if (node.log.entry(index).type === EntryType.config) return;
  }
  if (node.config.preVote && !transfer) {
    becomePreCandidate(node);
    requestVotes(node, 'preVote', node.term + 1, false);
  } else {
    becomeCandidate(node);
    requestVotes(node, 'vote', node.term, transfer);
  }
}

function requestVotes(node: NodeState, type: 'vote' | 'preVote', term: number, transfer: boolean): void {
  assert(type === 'preVote' ? node.role === Role.preCandidate : node.role === Role.candidate, 'campaigning role');
  assert(term === (type === 'preVote' ? node.term + 1 : node.term), 'votes are asked for the campaign\'s term');
  node.votes.set(node.id, true);
  if (checkVotes(node)) return;
  for (const to of allVoters(node.confState)) {
    if (to === node.id) continue;
    node.send({
      type,
      to,
      term,
      lastIndex: node.log.lastIndex(),
      lastTerm: node.log.lastTerm(),
      transfer,
    });
  }
}

/** Count votes; returns true when the election is decided. */
function checkVotes(node: NodeState): boolean {
  const result = voteResult(node.confState, node.votes);
  if (result === VoteResult.won) {
    if (node.role === Role.preCandidate) {
      becomeCandidate(node);
      requestVotes(node, 'vote', node.term, false);
    } else {
      becomeLeader(node);
    }
    return true;
  }
  if (result === VoteResult.lost) {
    becomeFollower(node, node.term, noMember);
    return true;
  }
  return false;
}

/** A candidate or pre-candidate counts an answer to its campaign. */
export function handleVoteResponse(node: NodeState, m: MessageOf<'voteResponse' | 'preVoteResponse'>): void {
  const expected = node.role === Role.candidate ? 'voteResponse' : 'preVoteResponse';
  if (m.type !== expected) return;
  node.votes.set(m.from, !m.reject);
  checkVotes(node);
}

export function handleVoteRequest(node: NodeState, m: MessageOf<'vote' | 'preVote'>): void {
  const canVote =
    node.vote === m.from ||
    (node.vote === noMember && node.leader === noMember) ||
    (m.type === 'preVote' && m.term > node.term) ||
    (m.type === 'vote' && node.config.bugs?.doubleVote === true);
  const responseType = m.type === 'vote' ? 'voteResponse' : 'preVoteResponse';
  if (canVote && node.log.isUpToDate(m.lastIndex, m.lastTerm)) {
    // A granted pre-vote carries the proposed term so the pre-candidate can count it.
    node.send({ type: responseType, to: m.from, term: m.term, reject: false });
    if (m.type === 'vote') {
      // stepTerm moved us to a newer term first: a vote is given only in the term it is asked for.
      assert(m.term === node.term, 'a vote is granted in the current term');
      node.electionElapsed = 0;
      node.setVote(m.from);
    }
  } else {
    node.send({ type: responseType, to: m.from, reject: true });
  }
}

/** Heartbeats, CheckQuorum and the leader-transfer timeout, once per tick. */
export function tickLeader(node: NodeState): void {
  assert(node.role === Role.leader, 'only a leader ticks heartbeats');
  node.heartbeatElapsed++;
  node.electionElapsed++;
  for (const pr of node.progress.values()) pr.tickSinceHeard();
  if (node.electionElapsed >= node.config.electionTicks) {
    node.electionElapsed = 0;
    if (node.config.checkQuorum && !quorumActive(node)) {
      // A leader cut off from its quorum steps down rather than pretend to lead.
      becomeFollower(node, node.term, noMember);
      return;
    }
    node.leadTransferee = noMember;
  }
  if (node.heartbeatElapsed >= node.config.heartbeatTicks) {
    node.heartbeatElapsed = 0;
    broadcastHeartbeat(node, node.reads.roundStarted);
  }
}

/** Did a quorum answer within the last election timeout? Starts the next period. */
function quorumActive(node: NodeState): boolean {
  const active = new Map<MemberId, boolean>();
  for (const [id, pr] of node.progress) {
    active.set(id, id === node.id || pr.recentActive);
    pr.recentActive = false;
  }
  return voteResult(node.confState, active) === VoteResult.won;
}
