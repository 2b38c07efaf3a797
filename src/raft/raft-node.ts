// The Raft core: elections (PreVote, CheckQuorum, leader transfer), replication with batching and
// pipelining, the commit rule of the paper's Figure 8, batched ReadIndex, learners and joint
// consensus, and snapshots. Pure and synchronous: the world comes in through tick/step/propose and
// leaves through ready(). Every invariant it relies on is asserted.
import { assert, unreachable } from '../base/assert.js';
import { randomInt, type Random } from '../base/random.js';
import {
  applyConfChange,
  confChangeProblem,
  decodeConfEntry,
  encodeConfEntry,
} from './conf-change.js';
import { RaftLog } from './log.js';
import { Progress, ProgressState } from './progress.js';
import { allMembers, allVoters, committedIndex, isVoter, voteResult, VoteResult } from './quorum.js';
import { ReadIndexTracker } from './read-index.js';
import {
  EntryType,
  noMember,
  type ForwardRefusal,
  Role,
  type ConfChange,
  type ConfState,
  type Entry,
  type HardState,
  type MemberId,
  type ProposeResult,
  type RaftApi,
  type RaftConfig,
  type RaftMessage,
  type RaftStatus,
  type ReadState,
  type Ready,
  type RecoveredState,
  type Snapshot,
  type SnapshotMeta,
  type SoftState,
} from './types.js';

type MessageOf<T extends RaftMessage['type']> = RaftMessage & { type: T };
/** A message as written by the core: `from` is filled in, `term` defaults to the current term. */
type Outgoing = RaftMessage extends infer M
  ? M extends RaftMessage
    ? Omit<M, 'from' | 'term'> & { term?: number }
    : never
  : never;

const emptyData = new Uint8Array(0);

export class RaftNode implements RaftApi {
  readonly id: MemberId;
  private readonly config: RaftConfig;
  private readonly random: Random;
  private readonly log: RaftLog;

  // Invariant: term never decreases; vote changes at most once per term.
  private term: number;
  private vote: MemberId;
  private role: Role = Role.follower;
  private leader: MemberId = noMember;
  /** The highest term in which this node became leader (at most once per term). */
  private leaderTerm = 0;

  private confState: ConfState;
  /** Membership as of each configuration entry applied since the oldest kept snapshot. */
  private confHistory: { index: number; confState: ConfState }[];
  private progress = new Map<MemberId, Progress>();
  private votes = new Map<MemberId, boolean>();

  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTicks = 0;

  private leadTransferee: MemberId = noMember;
  /** Index of the latest configuration entry the leader appended (no second change before it applies). */
  private pendingConfIndex = 0;
  private uncommittedBytes = 0;
  private readonly reads = new ReadIndexTracker();
  /** Reads that arrived before this leader committed an entry of its own term. */
  private readsAwaitingCommit: { context: number; from: MemberId }[] = [];
  /** Follower side: commands to forward to the leader with the next batch. */
  private proposalsToForward: Uint8Array[] = [];
  /** Follower side: reads to forward to the leader with the next batch. */
  private readsToForward: number[] = [];
  /** Leader: new entries or a new commit index to send to followers with the next batch. */
  private broadcastPending = false;

  private snapshot: Snapshot | null;
  private snapshotToPersist: Snapshot | null = null;

  private appendMessages: RaftMessage[] = [];
  private messages: RaftMessage[] = [];
  private readStates: ReadState[] = [];
  private droppedReads: number[] = [];
  private lastHardState: HardState;
  private lastSoftState: SoftState;

  constructor(config: RaftConfig, recovered: RecoveredState, random: Random) {
    assert(config.id > 0, 'member id is positive');
    assert(config.heartbeatTicks > 0 && config.electionTicks > config.heartbeatTicks, 'tick config');
    this.id = config.id;
    this.config = config;
    this.random = random;
    const snapshot = recovered.snapshot;
    this.snapshot = snapshot;
    this.log = new RaftLog(
      snapshot === null ? { index: 0, term: 0 } : snapshot.meta,
      recovered.entries,
      { applyUncommitted: config.bugs?.applyUncommitted === true },
    );
    this.term = recovered.hardState.term;
    this.vote = recovered.hardState.vote;
    this.confState = snapshot === null ? recovered.initialConfState : snapshot.meta.confState;
    this.confHistory = [{ index: this.log.snapshotIndex, confState: this.confState }];
    const applied = Math.max(recovered.appliedIndex, this.log.snapshotIndex);
    const commit = Math.max(recovered.hardState.commit, applied);
    assert(commit <= this.log.lastIndex(), 'recovered commit index is within the recovered log');
    this.log.commitTo(commit);
    // The state machine already applied up to `applied`: replay only the membership it implies.
    for (let index = this.log.snapshotIndex + 1; index <= applied; index++) {
      this.applyEntryMembership(this.log.entry(index));
    }
    this.log.recoverApplied(applied);
    this.lastHardState = this.hardState();
    this.lastSoftState = { leader: noMember, role: Role.follower };
    this.resetElectionTimer();
  }

  // ---- the API --------------------------------------------------------------------------------

  tick(): void {
    if (this.role === Role.leader) this.tickLeader();
    else this.tickElection();
  }

  step(m: RaftMessage): void {
    // The driver's business (see the message type): no term, no role change comes of it.
    if (m.type === 'proposeRefused') return;
    if (!this.stepTerm(m)) return;
    switch (this.role) {
      case Role.leader:
        return this.stepLeader(m);
      case Role.candidate:
      case Role.preCandidate:
        return this.stepCandidate(m);
      case Role.follower:
        return this.stepFollower(m);
      default:
        unreachable(this.role, 'role');
    }
  }

  propose(data: Uint8Array): ProposeResult {
    return this.appendProposal(EntryType.normal, data);
  }

  forwardProposal(data: Uint8Array): boolean {
    if (this.role === Role.leader) return this.propose(data).ok;
    if (this.role !== Role.follower || this.leader === noMember) return false;
    this.proposalsToForward.push(data);
    return true;
  }

  proposeConfChange(change: ConfChange): ProposeResult {
    if (this.role !== Role.leader) return this.refuse('notLeader');
    if (this.pendingConfIndex > this.log.appliedIndex || this.confState.votersOutgoing.length > 0) {
      return this.refuse('confChangePending');
    }
    if (change.type !== 'enterJoint' || confChangeProblem(this.confState, change) !== null) {
      return this.refuse('invalidConfChange');
    }
    const confState = applyConfChange(this.confState, change);
    const result = this.appendProposal(EntryType.config, encodeConfEntry({ change, confState }));
    if (result.ok) this.pendingConfIndex = result.index;
    return result;
  }

  readIndex(context: number): void {
    if (this.role === Role.leader) {
      this.leaderRead(context, this.id);
    } else if (this.leader !== noMember && this.role === Role.follower) {
      this.readsToForward.push(context);
    } else {
      this.droppedReads.push(context);
    }
  }

  transferLeadership(to: MemberId): void {
    if (this.role !== Role.leader || to === this.id || !this.confState.voters.includes(to)) return;
    if (this.leadTransferee === to) return;
    this.leadTransferee = to;
    // The transfer must finish within one election timeout, or it is abandoned.
    this.electionElapsed = 0;
    const progress = this.progressOf(to);
    if (progress.match === this.log.lastIndex()) this.send({ type: 'timeoutNow', to });
    else this.sendAppend(to, true);
  }

  campaign(): void {
    this.hup(false);
  }

  reportUnreachable(to: MemberId): void {
    const progress = this.progress.get(to);
    if (this.role !== Role.leader || progress === undefined) return;
    if (progress.state === ProgressState.replicate) progress.becomeProbe();
  }

  reportSnapshot(to: MemberId, ok: boolean): void {
    const progress = this.progress.get(to);
    if (this.role !== Role.leader || progress === undefined) return;
    if (progress.state !== ProgressState.snapshot) return;
    if (!ok) progress.pendingSnapshot = 0;
    progress.becomeProbe();
    // Wait for the follower's answer to the snapshot before probing again.
    progress.probeSent = ok;
  }

  hasReady(): boolean {
    return (
      this.appendMessages.length > 0 ||
      this.messages.length > 0 ||
      this.broadcastPending ||
      this.readsToForward.length > 0 ||
      this.proposalsToForward.length > 0 ||
      this.log.hasUnstable() ||
      this.snapshotToPersist !== null ||
      this.log.hasToApply() ||
      this.readStates.length > 0 ||
      this.droppedReads.length > 0 ||
      !sameHardState(this.hardState(), this.lastHardState) ||
      !sameSoftState(this.softState(), this.lastSoftState)
    );
  }

  ready(): Ready {
    // Hand out committed entries first: a configuration entry among them may make the leader
    // append the leave-joint entry, which must travel in this same batch.
    const committed = this.takeCommitted();
    this.flushBroadcast();
    this.flushForwardedReads();
    this.flushForwardedProposals();
    const hardState = this.hardState();
    const softState = this.softState();
    const hardChanged = !sameHardState(hardState, this.lastHardState);
    let appendMessages = this.appendMessages;
    let messages = this.messages;
    if (hardChanged && (hardState.term !== this.lastHardState.term || hardState.vote !== this.lastHardState.vote)) {
      // A new term or vote must be durable before anything stamped with it leaves.
      messages = [...appendMessages, ...messages];
      appendMessages = [];
    }
    const ready: Ready = {
      softState: sameSoftState(softState, this.lastSoftState) ? null : softState,
      hardState: hardChanged ? hardState : null,
      snapshot: this.snapshotToPersist,
      entries: this.log.takeUnstable(),
      appendMessages,
      messages,
      committed,
      readStates: this.readStates,
      droppedReads: this.droppedReads,
    };
    this.lastHardState = hardState;
    this.lastSoftState = softState;
    this.snapshotToPersist = null;
    this.appendMessages = [];
    this.messages = [];
    this.readStates = [];
    this.droppedReads = [];
    return ready;
  }

  advance(ready: Ready): void {
    if (ready.snapshot !== null) this.log.markSnapshotDurable(ready.snapshot.meta);
    this.log.markDurable(ready.entries);
    if (this.role === Role.leader) {
      // The leader counts itself toward commit only for what is on its own disk.
      const self = this.progressOf(this.id);
      self.maybeUpdate(this.log.durableIndex);
      // When the leader's own write is the last of a quorum to finish, followers learn the new
      // commit index now, not at the next heartbeat (up to a tick of latency per request).
      if (this.maybeCommit()) this.broadcastPending = true;
    }
  }

  compact(index: number, data: Uint8Array): Snapshot {
    assert(index > this.log.snapshotIndex, 'a new snapshot is newer than the last one');
    assert(index <= this.log.appliedIndex, 'a snapshot covers only applied entries');
    const term = this.log.term(index);
    assert(term !== undefined, 'the snapshot index is in the log');
    const snapshot: Snapshot = { meta: { index, term, confState: this.confStateAt(index) }, data };
    this.log.compactTo(index);
    this.snapshot = snapshot;
    const kept = this.confHistory.filter((at) => at.index > index);
    this.confHistory = [{ index, confState: snapshot.meta.confState }, ...kept];
    return snapshot;
  }

  snapshotMetaAt(index: number): SnapshotMeta | null {
    if (index <= this.log.snapshotIndex || index > this.log.appliedIndex) return null;
    const term = this.log.term(index);
    assert(term !== undefined, 'an applied index after the snapshot is in the log');
    return { index, term, confState: this.confStateAt(index) };
  }

  status(): RaftStatus {
    const progress = new Map<MemberId, { match: number; next: number; state: string }>();
    for (const [id, pr] of this.progress) progress.set(id, pr.describe());
    return {
      id: this.id,
      term: this.term,
      vote: this.vote,
      role: this.role,
      leader: this.leader,
      commitIndex: this.log.committedIndex,
      commitTerm: this.log.term(this.log.committedIndex) ?? 0,
      appliedIndex: this.log.appliedIndex,
      lastIndex: this.log.lastIndex(),
      firstIndex: this.log.firstIndex(),
      confState: this.confState,
      progress,
    };
  }

  // ---- terms and roles ------------------------------------------------------------------------

  /** Term rules shared by every role. Returns false when the message is to be ignored. */
  private stepTerm(m: RaftMessage): boolean {
    if (m.term > this.term) {
      if (m.type === 'vote' || m.type === 'preVote') {
        // A node that heard from a live leader recently ignores campaigns (it would only disrupt
        // a healthy cell), unless the leader itself asked for the transfer.
        const inLease =
          this.config.checkQuorum && this.leader !== noMember && this.electionElapsed < this.config.electionTicks;
        if (inLease && !m.transfer) return false;
      }
      if (m.type === 'preVote') return true; // a pre-vote never changes our term
      if (m.type === 'preVoteResponse' && !m.reject) return true; // echoes the term we would use
      const leader =
        m.type === 'append' || m.type === 'heartbeat' || m.type === 'snapshot' ? m.from : noMember;
      this.becomeFollower(m.term, leader);
      return true;
    }
    if (m.term < this.term) {
      if ((this.config.checkQuorum || this.config.preVote) && (m.type === 'heartbeat' || m.type === 'append')) {
        // Tell a deposed leader that a newer term exists, so it steps down.
        this.send({ type: 'appendResponse', to: m.from, index: 0, reject: false, rejectHint: 0, hintTerm: 0 });
      } else if (m.type === 'preVote') {
        this.send({ type: 'preVoteResponse', to: m.from, reject: true });
      } else if (m.type === 'propose') {
        this.refuseForwarded(m.from, m.commands, 'notLeader');
      }
      return false;
    }
    return true;
  }

  private becomeFollower(term: number, leader: MemberId): void {
    this.leaveLeadership();
    this.setTerm(term);
    this.role = Role.follower;
    this.leader = leader;
    this.resetElectionTimer();
  }

  private becomePreCandidate(): void {
    assert(this.role !== Role.leader, 'a leader never becomes a pre-candidate');
    this.role = Role.preCandidate;
    this.leader = noMember;
    this.votes = new Map();
    this.resetElectionTimer();
  }

  private becomeCandidate(): void {
    assert(this.role !== Role.leader, 'a leader never becomes a candidate');
    this.setTerm(this.term + 1);
    this.setVote(this.id);
    this.role = Role.candidate;
    this.leader = noMember;
    this.votes = new Map();
    this.resetElectionTimer();
  }

  private becomeLeader(): void {
    assert(this.role === Role.candidate, 'only a candidate becomes leader');
    assert(this.leaderTerm < this.term, 'a node becomes leader at most once per term');
    this.leaderTerm = this.term;
    this.role = Role.leader;
    this.leader = this.id;
    this.resetElectionTimer();
    this.heartbeatElapsed = 0;
    this.leadTransferee = noMember;
    this.uncommittedBytes = 0;
    this.progress = new Map();
    for (const id of allMembers(this.confState)) this.addProgress(id);
    const self = this.progress.get(this.id);
    if (self !== undefined) self.maybeUpdate(this.log.durableIndex);
    // No configuration change until everything this leader inherited has been applied.
    this.pendingConfIndex = this.log.lastIndex();
    // The no-op: committing an entry of its own term commits everything before it (Figure 8).
    this.log.appendNew({ index: this.log.lastIndex() + 1, term: this.term, type: EntryType.normal, data: emptyData });
    this.broadcastPending = true;
  }

  private leaveLeadership(): void {
    for (const read of this.reads.drain()) this.failRead(read.context, read.from);
    for (const read of this.readsAwaitingCommit) this.failRead(read.context, read.from);
    this.readsAwaitingCommit = [];
    this.leadTransferee = noMember;
    this.broadcastPending = false;
  }

  private setTerm(term: number): void {
    assert(term >= this.term, `term never goes backwards (${this.term} -> ${term})`);
    if (term > this.term) {
      this.term = term;
      this.vote = noMember;
    }
  }

  private setVote(vote: MemberId): void {
    assert(
      this.config.bugs?.doubleVote === true || this.vote === noMember || this.vote === vote,
      `one vote per term (term ${this.term}: voted ${this.vote}, now ${vote})`,
    );
    this.vote = vote;
  }

  private resetElectionTimer(): void {
    this.electionElapsed = 0;
    const ticks = this.config.electionTicks;
    this.randomizedElectionTicks = randomInt(this.random, ticks, 2 * ticks - 1);
  }

  // ---- elections ------------------------------------------------------------------------------

  private tickElection(): void {
    this.electionElapsed++;
    if (this.isPromotable() && this.electionElapsed >= this.randomizedElectionTicks) {
      this.electionElapsed = 0;
      this.hup(false);
    }
  }

  private isPromotable(): boolean {
    return isVoter(this.confState, this.id);
  }

  private hup(transfer: boolean): void {
    if (this.role === Role.leader || !this.isPromotable()) return;
    // A committed membership change not yet applied could change who may vote: wait for it.
    for (let index = this.log.appliedIndex + 1; index <= this.log.committedIndex; index++) {
      if (this.log.entry(index).type === EntryType.config) return;
    }
    if (this.config.preVote && !transfer) {
      this.becomePreCandidate();
      this.requestVotes('preVote', this.term + 1, false);
    } else {
      this.becomeCandidate();
      this.requestVotes('vote', this.term, transfer);
    }
  }

  private requestVotes(type: 'vote' | 'preVote', term: number, transfer: boolean): void {
    this.votes.set(this.id, true);
    if (this.checkVotes()) return;
    for (const to of allVoters(this.confState)) {
      if (to === this.id) continue;
      this.send({
        type,
        to,
        term,
        lastIndex: this.log.lastIndex(),
        lastTerm: this.log.lastTerm(),
        transfer,
      });
    }
  }

  /** Count votes; returns true when the election is decided. */
  private checkVotes(): boolean {
    const result = voteResult(this.confState, this.votes);
    if (result === VoteResult.won) {
      if (this.role === Role.preCandidate) {
        this.becomeCandidate();
        this.requestVotes('vote', this.term, false);
      } else {
        this.becomeLeader();
      }
      return true;
    }
    if (result === VoteResult.lost) {
      this.becomeFollower(this.term, noMember);
      return true;
    }
    return false;
  }

  private handleVoteRequest(m: MessageOf<'vote' | 'preVote'>): void {
    const canVote =
      this.vote === m.from ||
      (this.vote === noMember && this.leader === noMember) ||
      (m.type === 'preVote' && m.term > this.term) ||
      (m.type === 'vote' && this.config.bugs?.doubleVote === true);
    const responseType = m.type === 'vote' ? 'voteResponse' : 'preVoteResponse';
    if (canVote && this.log.isUpToDate(m.lastIndex, m.lastTerm)) {
      // A granted pre-vote carries the proposed term so the pre-candidate can count it.
      this.send({ type: responseType, to: m.from, term: m.term, reject: false });
      if (m.type === 'vote') {
        this.electionElapsed = 0;
        this.setVote(m.from);
      }
    } else {
      this.send({ type: responseType, to: m.from, reject: true });
    }
  }

  // ---- per-role message handling ----------------------------------------------------------------

  private stepFollower(m: RaftMessage): void {
    switch (m.type) {
      case 'append':
        this.electionElapsed = 0;
        this.leader = m.from;
        return this.handleAppend(m);
      case 'heartbeat':
        this.electionElapsed = 0;
        this.leader = m.from;
        return this.handleHeartbeat(m);
      case 'snapshot':
        this.electionElapsed = 0;
        this.leader = m.from;
        return this.handleSnapshot(m);
      case 'timeoutNow':
        return this.hup(true);
      case 'readIndexResponse':
        return this.handleReadIndexResponse(m);
      case 'vote':
      case 'preVote':
        return this.handleVoteRequest(m);
      case 'readIndex':
        // Only the leader answers reads; a forwarded read reaching a follower is refused.
        return this.send({ type: 'readIndexResponse', to: m.from, contexts: m.contexts, index: -1 });
      case 'propose':
        return this.refuseForwarded(m.from, m.commands, 'notLeader');
      default:
        return;
    }
  }

  private stepCandidate(m: RaftMessage): void {
    switch (m.type) {
      case 'append':
      case 'heartbeat':
      case 'snapshot':
        // Someone won this term.
        this.becomeFollower(m.term, m.from);
        return this.stepFollower(m);
      case 'vote':
      case 'preVote':
        return this.handleVoteRequest(m);
      case 'voteResponse':
      case 'preVoteResponse': {
        const expected = this.role === Role.candidate ? 'voteResponse' : 'preVoteResponse';
        if (m.type !== expected) return;
        this.votes.set(m.from, !m.reject);
        this.checkVotes();
        return;
      }
      case 'readIndex':
        return this.send({ type: 'readIndexResponse', to: m.from, contexts: m.contexts, index: -1 });
      case 'propose':
        return this.refuseForwarded(m.from, m.commands, 'notLeader');
      default:
        return;
    }
  }

  private stepLeader(m: RaftMessage): void {
    switch (m.type) {
      case 'appendResponse':
        return this.handleAppendResponse(m);
      case 'heartbeatResponse':
        return this.handleHeartbeatResponse(m);
      case 'vote':
      case 'preVote':
        return this.handleVoteRequest(m);
      case 'append':
      case 'heartbeat':
      case 'snapshot':
        assert(false, `two leaders in term ${this.term}: ${this.id} and ${m.from}`);
        return;
      case 'propose':
        if (!this.progress.has(m.from)) return;
        return this.appendForwarded(m.from, m.commands);
      case 'readIndex':
        if (!this.progress.has(m.from)) return;
        for (const context of m.contexts) this.leaderRead(context, m.from);
        return;
      default:
        return;
    }
  }

  // ---- follower: receiving the log ---------------------------------------------------------------

  private handleAppend(m: MessageOf<'append'>): void {
    if (m.prevIndex < this.log.committedIndex) {
      this.respondAppend(m.from, this.log.committedIndex);
      return;
    }
    if (this.log.matchTerm(m.prevIndex, m.prevTerm)) {
      const lastNew = this.log.merge(m.prevIndex, m.entries);
      this.log.commitTo(Math.min(m.commit, lastNew));
      this.respondAppend(m.from, lastNew);
      return;
    }
    const hint = this.log.findConflictByTerm(Math.min(m.prevIndex, this.log.lastIndex()), m.prevTerm);
    this.send({
      type: 'appendResponse',
      to: m.from,
      index: m.prevIndex,
      reject: true,
      rejectHint: hint,
      hintTerm: this.log.term(hint) ?? 0,
    });
  }

  private respondAppend(to: MemberId, index: number): void {
    this.send({ type: 'appendResponse', to, index, reject: false, rejectHint: 0, hintTerm: 0 });
  }

  private handleHeartbeat(m: MessageOf<'heartbeat'>): void {
    // The leader sends min(our match, its commit), so everything up to it matches its log.
    this.log.commitTo(Math.min(m.commit, this.log.lastIndex()));
    this.send({ type: 'heartbeatResponse', to: m.from, readRound: m.readRound });
  }

  private handleSnapshot(m: MessageOf<'snapshot'>): void {
    const meta = m.snapshot.meta;
    if (meta.index <= this.log.committedIndex) {
      this.respondAppend(m.from, this.log.committedIndex);
      return;
    }
    if (this.log.matchTerm(meta.index, meta.term)) {
      // We already have the entries: just learn that they are committed.
      this.log.commitTo(meta.index);
      this.respondAppend(m.from, this.log.committedIndex);
      return;
    }
    this.log.restore(meta);
    this.snapshot = m.snapshot;
    this.snapshotToPersist = m.snapshot;
    this.confState = meta.confState;
    this.confHistory = [{ index: meta.index, confState: meta.confState }];
    this.respondAppend(m.from, meta.index);
  }

  private handleReadIndexResponse(m: MessageOf<'readIndexResponse'>): void {
    for (const context of m.contexts) {
      if (m.index < 0) this.droppedReads.push(context);
      else this.readStates.push({ context, index: m.index });
    }
  }

  private flushForwardedProposals(): void {
    if (this.proposalsToForward.length === 0) return;
    if (this.role === Role.follower && this.leader !== noMember) {
      this.send({ type: 'propose', to: this.leader, commands: this.proposalsToForward });
    }
    // Otherwise they are dropped: the proposer's wait times out and the client retries.
    this.proposalsToForward = [];
  }

  private flushForwardedReads(): void {
    if (this.readsToForward.length === 0) return;
    if (this.role === Role.follower && this.leader !== noMember) {
      this.send({ type: 'readIndex', to: this.leader, contexts: this.readsToForward });
    } else {
      this.droppedReads.push(...this.readsToForward);
    }
    this.readsToForward = [];
  }

  // ---- leader: replication, commit, reads ---------------------------------------------------------

  private tickLeader(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.config.electionTicks) {
      this.electionElapsed = 0;
      if (this.config.checkQuorum && !this.quorumActive()) {
        // A leader cut off from its quorum steps down rather than pretend to lead.
        this.becomeFollower(this.term, noMember);
        return;
      }
      this.leadTransferee = noMember;
    }
    if (this.heartbeatElapsed >= this.config.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      this.broadcastHeartbeat(this.reads.roundStarted);
    }
  }

  private quorumActive(): boolean {
    const active = new Map<MemberId, boolean>();
    for (const [id, pr] of this.progress) {
      active.set(id, id === this.id || pr.recentActive);
      pr.recentActive = false;
    }
    return voteResult(this.confState, active) === VoteResult.won;
  }

  private appendProposal(type: EntryType, data: Uint8Array): ProposeResult {
    if (this.role !== Role.leader) return this.refuse('notLeader');
    if (this.leadTransferee !== noMember) return this.refuse('transferring');
    if (this.uncommittedBytes + data.byteLength > this.config.uncommittedBytesMax) {
      return this.refuse('tooLarge');
    }
    const index = this.log.lastIndex() + 1;
    this.log.appendNew({ index, term: this.term, type, data });
    this.uncommittedBytes += data.byteLength;
    this.broadcastPending = true;
    return { ok: true, index, term: this.term };
  }

  /** A follower's commands: appended in order; the ones refused go back, grouped by reason. */
  private appendForwarded(from: MemberId, commands: readonly Uint8Array[]): void {
    let refused: Map<ForwardRefusal, Uint8Array[]> | null = null;
    for (const command of commands) {
      const result = this.propose(command);
      if (result.ok) continue;
      assert(result.reason === 'notLeader' || result.reason === 'transferring' || result.reason === 'tooLarge',
        'a normal proposal is refused for leadership or room only');
      refused ??= new Map();
      const list = refused.get(result.reason) ?? [];
      list.push(command);
      refused.set(result.reason, list);
    }
    for (const [reason, list] of refused ?? []) this.refuseForwarded(from, list, reason);
  }

  private refuseForwarded(to: MemberId, commands: readonly Uint8Array[], reason: ForwardRefusal): void {
    if (commands.length > 0) this.send({ type: 'proposeRefused', to, reason, commands });
  }

  private refuse(reason: Exclude<ProposeResult, { ok: true }>['reason']): ProposeResult {
    return { ok: false, reason, leader: this.leader };
  }

  private flushBroadcast(): void {
    if (!this.broadcastPending || this.role !== Role.leader) return;
    this.broadcastPending = false;
    for (const id of this.progress.keys()) {
      if (id !== this.id) this.sendAppend(id, true);
    }
  }

  /** Send `to` what it lacks (entries, or a snapshot if they are compacted away). */
  private sendAppend(to: MemberId, sendIfEmpty: boolean): boolean {
    const pr = this.progressOf(to);
    if (pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    if (prevTerm === undefined) return this.sendSnapshot(to, pr);
    const entries = this.log.slice(pr.next, this.log.lastIndex(), this.config.appendBytesMax);
    if (entries.length === 0 && !sendIfEmpty) return false;
    this.send({ type: 'append', to, prevIndex, prevTerm, entries, commit: this.log.committedIndex });
    pr.sentAppend(prevIndex + entries.length, entries.length);
    return true;
  }

  private sendSnapshot(to: MemberId, pr: Progress): boolean {
    const snapshot = this.snapshot;
    assert(snapshot !== null, 'entries are compacted only behind a snapshot');
    if (!pr.recentActive) return false; // do not ship a snapshot to a node that may be down
    pr.becomeSnapshot(snapshot.meta.index);
    this.send({ type: 'snapshot', to, snapshot });
    return true;
  }

  private broadcastHeartbeat(readRound: number): void {
    for (const [id, pr] of this.progress) {
      if (id === this.id) continue;
      const commit = Math.min(pr.match, this.log.committedIndex);
      this.send({ type: 'heartbeat', to: id, commit, readRound });
    }
  }

  private handleAppendResponse(m: MessageOf<'appendResponse'>): void {
    const pr = this.progress.get(m.from);
    if (pr === undefined) return;
    pr.recentActive = true;
    if (m.reject) {
      let hint = m.rejectHint;
      if (m.hintTerm > 0) hint = this.log.findConflictByTerm(m.rejectHint, m.hintTerm);
      if (pr.maybeDecrease(m.index, hint)) {
        if (pr.state === ProgressState.replicate) pr.becomeProbe();
        this.sendAppend(m.from, true);
      }
      return;
    }
    if (pr.maybeUpdate(m.index)) {
      if (pr.state === ProgressState.probe) pr.becomeReplicate();
      else if (pr.state === ProgressState.snapshot && pr.match >= pr.pendingSnapshot) {
        pr.becomeProbe();
        pr.becomeReplicate();
      }
      if (this.maybeCommit()) this.broadcastPending = true;
      while (this.sendAppend(m.from, false)) {
        // Fill the pipelining window.
      }
      if (this.leadTransferee === m.from && pr.match === this.log.lastIndex()) {
        this.send({ type: 'timeoutNow', to: m.from });
      }
    }
  }

  private handleHeartbeatResponse(m: MessageOf<'heartbeatResponse'>): void {
    const pr = this.progress.get(m.from);
    if (pr === undefined) return;
    pr.recentActive = true;
    pr.probeSent = false;
    // A lost append would otherwise stall a full pipeline forever.
    if (pr.state === ProgressState.replicate && pr.inflightFull()) pr.freeFirstInflight();
    if (pr.match < this.log.lastIndex()) this.sendAppend(m.from, true);
    if (isVoter(this.confState, m.from)) {
      this.reads.ack(m.from, m.readRound);
      this.releaseConfirmedReads();
    }
  }

  /** Advance the commit index to what a quorum has durably stored (Figure 8 rule). */
  private maybeCommit(): boolean {
    const index = committedIndex(this.confState, (id) => this.progress.get(id)?.match ?? 0);
    if (index <= this.log.committedIndex) return false;
    const ownTerm = this.log.term(index) === this.term;
    if (!ownTerm && this.config.bugs?.commitOldTermEntries !== true) return false;
    const previous = this.log.committedIndex;
    this.log.commitTo(index);
    for (let at = previous + 1; at <= index; at++) {
      const entry = this.log.entry(at);
      if (entry.term === this.term) this.uncommittedBytes -= entry.data.byteLength;
    }
    this.uncommittedBytes = Math.max(0, this.uncommittedBytes);
    if (ownTerm && this.readsAwaitingCommit.length > 0) {
      const waiting = this.readsAwaitingCommit;
      this.readsAwaitingCommit = [];
      for (const read of waiting) this.leaderRead(read.context, read.from);
    }
    return true;
  }

  private leaderRead(context: number, from: MemberId): void {
    if (this.log.term(this.log.committedIndex) !== this.term) {
      // Until an entry of this term commits, the commit index may lag what earlier leaders committed.
      this.readsAwaitingCommit.push({ context, from });
      return;
    }
    const round = this.reads.add(context, from, this.log.committedIndex);
    if (round > 0) this.broadcastHeartbeat(round);
    this.releaseConfirmedReads();
  }

  private releaseConfirmedReads(): void {
    const done = this.reads.confirmed(this.confState, this.id);
    const remote = new Map<MemberId, { index: number; contexts: number[] }[]>();
    for (const read of done) {
      if (read.from === this.id) {
        this.readStates.push({ context: read.context, index: read.index });
        continue;
      }
      const batches = remote.get(read.from) ?? [];
      const last = batches[batches.length - 1];
      if (last !== undefined && last.index === read.index) last.contexts.push(read.context);
      else batches.push({ index: read.index, contexts: [read.context] });
      remote.set(read.from, batches);
    }
    for (const [to, batches] of remote) {
      for (const batch of batches) this.send({ type: 'readIndexResponse', to, ...batch });
    }
    const round = this.reads.nextRound();
    if (round > 0) this.broadcastHeartbeat(round);
  }

  private failRead(context: number, from: MemberId): void {
    if (from === this.id) this.droppedReads.push(context);
    else this.send({ type: 'readIndexResponse', to: from, contexts: [context], index: -1 });
  }

  // ---- applying: committed entries and membership --------------------------------------------------

  private takeCommitted(): Entry[] {
    const limit = this.log.applyLimit();
    if (this.log.appliedIndex >= limit) return [];
    const entries = this.log.slice(this.log.appliedIndex + 1, limit, this.config.applyBytesMax);
    for (const entry of entries) {
      this.applyEntryMembership(entry);
      this.log.appliedTo(entry.index);
    }
    this.maybeLeaveJoint();
    return entries;
  }

  private applyEntryMembership(entry: Entry): void {
    if (entry.type !== EntryType.config) return;
    const { change, confState } = decodeConfEntry(entry.data);
    this.confState = confState;
    this.confHistory.push({ index: entry.index, confState: this.confState });
    if (this.role !== Role.leader) return;
    for (const id of allMembers(this.confState)) if (!this.progress.has(id)) this.addProgress(id);
    for (const id of [...this.progress.keys()]) {
      if (!allMembers(this.confState).includes(id)) this.progress.delete(id);
    }
    if (change.type === 'enterJoint') {
      // C_old,new is committed: C_new follows once the batch is applied (maybeLeaveJoint).
    } else if (!isVoter(this.confState, this.id)) {
      // Removed from the cell: stop leading; the remaining voters elect a leader.
      this.becomeFollower(this.term, noMember);
    } else {
      this.maybeCommit();
    }
  }

  /**
   * A leader whose applied configuration is joint moves on to C_new once no configuration entry is
   * pending (etcd's auto-leave): right after it applied its own C_old,new, and also when it was
   * elected after its predecessor applied C_old,new but before C_new committed (then only once it
   * has applied everything it inherited). Without the second case the cell stayed joint, and
   * refused every later change, for good (the simulator's seed 7097, leases, found it).
   */
  private maybeLeaveJoint(): void {
    if (this.role !== Role.leader || this.confState.votersOutgoing.length === 0) return;
    if (this.pendingConfIndex > this.log.appliedIndex) return;
    const leaveChange: ConfChange = { type: 'leaveJoint' };
    const leave = encodeConfEntry({ change: leaveChange, confState: applyConfChange(this.confState, leaveChange) });
    const index = this.log.lastIndex() + 1;
    this.log.appendNew({ index, term: this.term, type: EntryType.config, data: leave });
    this.pendingConfIndex = index;
    this.broadcastPending = true;
  }

  private confStateAt(index: number): ConfState {
    let conf = this.confHistory[0]?.confState ?? this.confState;
    for (const at of this.confHistory) if (at.index <= index) conf = at.confState;
    return conf;
  }

  // ---- helpers -------------------------------------------------------------------------------------

  private addProgress(id: MemberId): void {
    const pr = new Progress(this.log.lastIndex() + 1, this.config.inflightMessagesMax);
    pr.recentActive = true; // a new member gets one check-quorum period to answer
    this.progress.set(id, pr);
  }

  private progressOf(id: MemberId): Progress {
    const pr = this.progress.get(id);
    // The message is built only on failure (this runs for every message to or from a peer).
    if (pr === undefined) return assert(false, `progress for member ${id}`) as never;
    return pr;
  }

  private send(message: Outgoing): void {
    const full = { ...message, from: this.id, term: message.term ?? this.term } as RaftMessage;
    const leaderTraffic =
      this.role === Role.leader &&
      (full.type === 'append' || full.type === 'heartbeat' || full.type === 'snapshot' || full.type === 'timeoutNow');
    if (leaderTraffic) this.appendMessages.push(full);
    else this.messages.push(full);
  }

  private hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committedIndex };
  }

  private softState(): SoftState {
    return { leader: this.leader, role: this.role };
  }
}

function sameHardState(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

function sameSoftState(a: SoftState, b: SoftState): boolean {
  return a.leader === b.leader && a.role === b.role;
}
