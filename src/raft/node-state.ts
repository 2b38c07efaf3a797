// Everything one Raft member knows, shared by the protocol files (election, replication, reads,
// membership) that act on it. The fields that carry a safety invariant change only through the
// asserting mutators here (term, vote) or in the log (commit, apply, durability).
import { assert } from '../base/assert.js';
import { randomInt, type Random } from '../base/random.js';
import { RaftLog } from './log.js';
import { PeerLedger } from './peer-ledger.js';
import { Progress } from './progress.js';
import { ReadIndexTracker } from './read-index.js';
import {
  noMember,
  Role,
  type ConfState,
  type HardState,
  type MemberId,
  type RaftConfig,
  type RaftMessage,
  type ReadState,
  type RecoveredState,
  type Snapshot,
  type SoftState,
} from './types.js';

export type MessageOf<T extends RaftMessage['type']> = RaftMessage & { type: T };
/** A message as written by the core: `from` is filled in, `term` defaults to the current term. */
export type Outgoing = RaftMessage extends infer M
  ? M extends RaftMessage
    ? Omit<M, 'from' | 'term'> & { term?: number }
    : never
  : never;

export class NodeState {
  readonly id: MemberId;
  readonly config: RaftConfig;
  readonly log: RaftLog;
  /**
   * False when a test-only bug (RaftConfig.bugs) is on: it breaks the premise of some asserts
   * (Leader Completeness, one leader per term), and the simulator must catch it by its own checks.
   */
  readonly invariantsHold: boolean;
  private readonly random: Random;

  // Invariant: term never decreases; vote changes at most once per term (setTerm, setVote).
  private currentTerm: number;
  private currentVote: MemberId;
  role: Role = Role.follower;
  leader: MemberId = noMember;
  /** The highest term in which this node became leader (at most once per term). */
  leaderTerm = 0;

  confState: ConfState;
  /** Membership as of each configuration entry applied since the oldest kept snapshot. */
  confHistory: { index: number; confState: ConfState }[];
  progress = new Map<MemberId, Progress>();
  votes = new Map<MemberId, boolean>();

  electionElapsed = 0;
  heartbeatElapsed = 0;
  randomizedElectionTicks = 0;

  leadTransferee: MemberId = noMember;
  /** Index of the latest configuration entry the leader appended (no second change before it applies). */
  pendingConfIndex = 0;
  uncommittedBytes = 0;
  readonly reads = new ReadIndexTracker();
  /** Reads that arrived before this leader committed an entry of its own term. */
  readsAwaitingCommit: { context: number; from: MemberId }[] = [];
  /** Follower side: commands to forward to the leader with the next batch. */
  proposalsToForward: Uint8Array[] = [];
  /** Follower side: reads to forward to the leader with the next batch. */
  readsToForward: number[] = [];
  /** Leader: new entries (or, without deferred commit notices, a new commit index) for every follower with the next batch. */
  broadcastPending = false;
  /**
   * Leader, deferred commit notices (RaftConfig.deferCommitNotices): followers told of the
   * latest commit index by nothing yet. The next append to one carries it; else the driver asks
   * for the notices after a short delay (RaftNode.sendOwedCommitNotices).
   */
  readonly commitOwed = new Set<MemberId>();
  /** Leader: followers to send the commit index to with the next batch (their clients wait for it). */
  readonly commitNoticeTo = new Set<MemberId>();
  /** Leader: per follower, the index of the last entry appended from its forwarded proposals. */
  readonly forwardedUpTo = new Map<MemberId, number>();
  /**
   * Follower side: the leader's view of who is in contact, from its latest heartbeat (members
   * null: that heartbeat carried none, from a leader of peer protocol 2).
   */
  leaderContact: { leader: MemberId; term: number; members: readonly MemberId[] | null; ticksSinceHeartbeat: number } =
    { leader: noMember, term: 0, members: [], ticksSinceHeartbeat: 0 };

  /** What each peer promised this member (peer-ledger.ts). */
  readonly ledger: PeerLedger;
  /** After a restart with ledgerCheck: the peers not yet asked back, and when to give up waiting. */
  recovery: { waiting: Set<MemberId>; ticksLeft: number; ticksToResend: number } | null = null;
  /** Why this member's data went back in time (peer-ledger.ts); it then stays out for good. */
  regressed: string | null = null;

  /** The snapshot the log starts from (sent to followers whose next entry is compacted away). */
  snapshot: Snapshot | null;
  /** A snapshot received from the leader, for the next Ready. */
  snapshotToPersist: Snapshot | null = null;

  // What the next Ready carries besides log entries.
  appendMessages: RaftMessage[] = [];
  messages: RaftMessage[] = [];
  readStates: ReadState[] = [];
  droppedReads: number[] = [];

  constructor(config: RaftConfig, recovered: RecoveredState, random: Random) {
    assert(config.id > 0, 'member id is positive');
    assert(config.heartbeatTicks > 0 && config.electionTicks > config.heartbeatTicks, 'tick config');
    this.id = config.id;
    this.config = config;
    this.random = random;
    this.ledger = new PeerLedger(config.id, recovered.ledger);
    const bugs = config.bugs ?? {};
    this.invariantsHold = !(
      bugs.commitOldTermEntries === true ||
      bugs.doubleVote === true ||
      bugs.applyUncommitted === true ||
      bugs.readWithoutQuorum === true ||
      bugs.voteWithoutPersist === true ||
      bugs.appendPastGap === true
    );
    const snapshot = recovered.snapshot;
    this.snapshot = snapshot;
    this.log = new RaftLog(
      snapshot === null ? { index: 0, term: 0 } : snapshot.meta,
      recovered.entries,
      { applyUncommitted: config.bugs?.applyUncommitted === true },
    );
    assert(recovered.hardState.term >= 0, 'a recovered term is not negative');
    this.currentTerm = recovered.hardState.term;
    this.currentVote = recovered.hardState.vote;
    this.confState = snapshot === null ? recovered.initialConfState : snapshot.meta.confState;
    this.confHistory = [{ index: this.log.snapshotIndex, confState: this.confState }];
  }

  get term(): number {
    return this.currentTerm;
  }

  get vote(): MemberId {
    return this.currentVote;
  }

  /** Move to `term` (a new term clears the vote). */
  setTerm(term: number): void {
    assert(term >= this.currentTerm, `term never goes backwards (${this.currentTerm} -> ${term})`);
    if (term > this.currentTerm) {
      this.currentTerm = term;
      this.currentVote = noMember;
    }
  }

  setVote(vote: MemberId): void {
    assert(vote !== noMember, 'a vote names a member');
    assert(
      this.config.bugs?.doubleVote === true || this.currentVote === noMember || this.currentVote === vote,
      `one vote per term (term ${this.currentTerm}: voted ${this.currentVote}, now ${vote})`,
    );
    this.currentVote = vote;
  }

  resetElectionTimer(): void {
    this.electionElapsed = 0;
    const ticks = this.config.electionTicks;
    this.randomizedElectionTicks = randomInt(this.random, ticks, 2 * ticks - 1);
  }

  addProgress(id: MemberId): void {
    const pr = new Progress(this.log.lastIndex() + 1, this.config.inflightMessagesMax);
    pr.recentActive = true; // a new member gets one check-quorum period to answer
    this.progress.set(id, pr);
  }

  progressOf(id: MemberId): Progress {
    const pr = this.progress.get(id);
    // The message is built only on failure (this runs for every message to or from a peer).
    if (pr === undefined) return assert(false, `progress for member ${id}`) as never;
    return pr;
  }

  /** Queue a message for the next Ready: the leader's replication traffic may leave before the disk write. */
  send(message: Outgoing): void {
    const full = { ...message, from: this.id, term: message.term ?? this.currentTerm } as RaftMessage;
    const leaderTraffic =
      this.role === Role.leader &&
      (full.type === 'append' || full.type === 'heartbeat' || full.type === 'snapshot' || full.type === 'timeoutNow');
    assert(this.regressed === null || full.type === 'ledgerReport', 'a regressed member only answers ledger queries');
    if (leaderTraffic) this.appendMessages.push(full);
    else this.messages.push(full);
  }

  hardState(): HardState {
    // Test-only bug (RaftBugs.voteWithoutPersist): the vote never reaches the disk.
    const vote = this.config.bugs?.voteWithoutPersist === true ? noMember : this.currentVote;
    return { term: this.currentTerm, vote, commit: this.log.committedIndex };
  }

  softState(): SoftState {
    return { leader: this.leader, role: this.role };
  }
}
