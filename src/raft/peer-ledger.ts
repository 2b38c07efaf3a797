// A member restarted on an older copy of its data directory would break the two promises Raft
// rests on: one vote per term, and an acknowledged entry kept (docs/design/older-copy.md). Its
// own disk cannot tell (the copy looks whole), but its peers can: each remembers what every peer
// promised it (PeerLedger, kept in memory), and a member that restarts asks them first
// (ledgerQuery) before it votes or acknowledges anything. An answer that shows more than its disk
// holds means the data went back in time: the member stays out for good (`regressed`) and says
// why, instead of voting twice or forgetting a committed entry.
import { assert } from '../base/assert.js';
import { voteResult, VoteResult } from './quorum.js';
import { becomeFollower } from './roles.js';
import type { MessageOf, NodeState } from './node-state.js';
import { noMember, Role, type MemberId, type PeerRecord, type RaftMessage } from './types.js';

const nothingKnown: PeerRecord = { term: 0, ackTerm: 0, ackIndex: 0, voteTerm: 0, votedFor: noMember };

export class PeerLedger {
  private readonly records = new Map<MemberId, PeerRecord>();
  /** Grows with every change, so a caller that keeps the ledger on disk writes it only then. */
  version = 0;

  /** `saved`: what this member kept on disk of an earlier run (a lower bound, so safe to start from). */
  constructor(private readonly self: MemberId, saved: readonly (readonly [MemberId, PeerRecord])[] = []) {
    for (const [peer, record] of saved) {
      assert(record.ackTerm <= record.term && record.voteTerm <= record.term, 'a saved ledger record is well formed');
      if (peer !== self) this.records.set(peer, record);
    }
  }

  entries(): (readonly [MemberId, PeerRecord])[] {
    return [...this.records];
  }

  recordOf(peer: MemberId): PeerRecord {
    return this.records.get(peer) ?? nothingKnown;
  }

  /** Learns what a received message proves its sender had on disk when it sent it. */
  observe(m: RaftMessage): void {
    // A pre-vote carries a term nobody persisted; the ledger's own messages prove nothing new.
    if (m.type === 'preVote' || m.type === 'preVoteResponse' || m.type === 'ledgerQuery' || m.type === 'ledgerReport') return;
    const old = this.recordOf(m.from);
    let record = old;
    if (m.term > record.term) record = { ...record, term: m.term };
    // An entry the peer has on disk in m.term: acknowledged by a follower; committed by a leader
    // (a leader counts itself toward a commit only once the entry is on its own disk, and a
    // commit index it learned as a follower was written with the term it now leads in), or the
    // last entry of a snapshot it sends (made of applied, so committed, entries).
    const held =
      m.type === 'appendResponse' ? (m.reject ? 0 : m.index)
        : m.type === 'append' || m.type === 'heartbeat' ? m.commit
          : m.type === 'snapshot' ? m.snapshot.meta.index
            : 0;
    if (held > 0 && (m.term > record.ackTerm || (m.term === record.ackTerm && held > record.ackIndex))) {
      record = { ...record, ackTerm: m.term, ackIndex: held };
    }
    if (m.type === 'voteResponse' && !m.reject) {
      if (m.term > record.voteTerm) record = { ...record, voteTerm: m.term, votedFor: this.self };
    } else if (m.type === 'vote') {
      // A candidate persists its term and its vote for itself before it asks anyone.
      if (m.term > record.voteTerm) record = { ...record, voteTerm: m.term, votedFor: m.from };
    }
    if (record !== old) {
      this.records.set(m.from, record);
      this.version++;
    }
  }
}

/** Asks every other member what this one promised it; no vote or acknowledgement until they answer. */
export function startRecovery(node: NodeState): void {
  const c = node.confState;
  const peers = new Set([...c.voters, ...c.votersOutgoing, ...c.learners]);
  peers.delete(node.id);
  if (peers.size === 0) return;
  node.recovery = { waiting: peers, ticksLeft: recoveryTicks(node), ticksToResend: node.config.electionTicks };
  for (const to of peers) node.send({ type: 'ledgerQuery', to });
}

/**
 * How long a restarted member waits for peers that do not answer (down, or of an older protocol)
 * before it goes on with the answers of a majority: waiting for all, one member down and one
 * restarting would leave a 3-member cell without a leader (5 election timeouts: 10 and 20 caught
 * no more in the sim's older-copy seeds). What a silent peer knew is then
 * checked when its answer comes, late (takeLedgerReport). It never goes on with fewer than a
 * majority: then no election or commit could count it anyway, and the peers that know what it
 * promised may be among those it cannot reach yet.
 */
function recoveryTicks(node: NodeState): number {
  return 5 * node.config.electionTicks;
}

function majorityAnswered(node: NodeState, waiting: ReadonlySet<MemberId>): boolean {
  const answered = new Map<MemberId, boolean>();
  for (const id of [...node.confState.voters, ...node.confState.votersOutgoing]) answered.set(id, !waiting.has(id));
  return voteResult(node.confState, answered) === VoteResult.won;
}

export function tickRecovery(node: NodeState): void {
  const recovery = node.recovery;
  assert(recovery !== null, 'ticks recovery only while recovering');
  if (--recovery.ticksLeft <= 0 && majorityAnswered(node, recovery.waiting)) {
    node.recovery = null;
    node.resetElectionTimer();
    return;
  }
  if (--recovery.ticksToResend <= 0) {
    recovery.ticksToResend = node.config.electionTicks;
    for (const to of recovery.waiting) node.send({ type: 'ledgerQuery', to });
  }
}

export function answerLedgerQuery(node: NodeState, m: MessageOf<'ledgerQuery'>): void {
  node.send({ type: 'ledgerReport', to: m.from, record: node.ledger.recordOf(m.from) });
}

/** A peer of an older build cannot answer: recovery stops waiting for it (it knows nothing to check). */
export function peerCannotAnswer(node: NodeState, peer: MemberId): void {
  const recovery = node.recovery;
  if (recovery === null || !recovery.waiting.delete(peer)) return;
  if (recovery.waiting.size === 0) {
    node.recovery = null;
    node.resetElectionTimer();
  }
}

/** Compares a peer's record of this member with its disk; also a late answer, after recovery. */
export function takeLedgerReport(node: NodeState, m: MessageOf<'ledgerReport'>): void {
  const reason = regression(node, m.from, m.record);
  if (reason !== null && node.regressed === null && node.config.bugs?.ignoreRegressed !== true) {
    node.regressed = reason;
    node.recovery = null;
    // A member found out late may be campaigning or even leading on what it forgot.
    if (node.role !== Role.follower || node.leader !== noMember) becomeFollower(node, node.term, noMember);
  }
  const recovery = node.recovery;
  if (recovery === null) return;
  recovery.waiting.delete(m.from);
  if (recovery.waiting.size === 0) {
    node.recovery = null;
    node.resetElectionTimer();
  }
}

/**
 * What `peer` saw this member promise that its disk no longer holds, or null. Only facts that
 * hold whatever happened since: a term never goes back; within one term a follower's log never
 * loses an entry it acknowledged (only a later leader may cut entries that did not commit); and a
 * vote given in a term stays given in that term.
 */
export function regression(node: NodeState, peer: MemberId, record: PeerRecord): string | null {
  const term = node.term;
  if (record.term > term) {
    return `member ${peer} heard term ${record.term} from this member, whose disk says term ${term}`;
  }
  const lastIndex = node.log.lastIndex();
  if (record.ackTerm === term && record.ackIndex > lastIndex) {
    return `this member acknowledged entry ${record.ackIndex} of term ${term} to member ${peer}, ` +
      `and its log ends at ${lastIndex}`;
  }
  if (record.voteTerm === term && record.votedFor !== noMember && node.vote !== record.votedFor) {
    const disk = node.vote === noMember ? 'no vote' : `a vote for ${node.vote}`;
    return `member ${peer} knows this member voted for ${record.votedFor} in term ${term}, and its disk says ${disk}`;
  }
  return null;
}
