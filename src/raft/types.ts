// The Raft core's vocabulary. The core is a pure, synchronous state machine: the caller feeds it
// ticks, messages and proposals, and collects a Ready batch of I/O to perform, in order.
import * as limits from '../base/limits.js';

/** A member id: a positive integer, unique within the cell and never reused. */
export type MemberId = number;
/** 0 means "no member" (no vote, no known leader). */
export const noMember: MemberId = 0;

export const EntryType = { normal: 0, config: 1 } as const;
export type EntryType = (typeof EntryType)[keyof typeof EntryType];

/** One log entry. A normal entry with empty data is the leader's no-op at the start of its term. */
export interface Entry {
  readonly index: number;
  readonly term: number;
  readonly type: EntryType;
  /** Opaque command bytes for normal entries; an encoded ConfChange for config entries. */
  readonly data: Uint8Array;
}

/** What must be durable before a vote or an append acknowledgement leaves the node. */
export interface HardState {
  readonly term: number;
  readonly vote: MemberId;
  readonly commit: number;
}

/**
 * Membership. While `votersOutgoing` is non-empty the cell is in joint consensus: every decision
 * (election, commit) needs a majority of `voters` AND a majority of `votersOutgoing`.
 */
export interface ConfState {
  readonly voters: readonly MemberId[];
  readonly votersOutgoing: readonly MemberId[];
  readonly learners: readonly MemberId[];
}

export interface SnapshotMeta {
  readonly index: number;
  readonly term: number;
  readonly confState: ConfState;
}

/** A state-machine snapshot at `meta.index`. `data` is opaque to the core. */
export interface Snapshot {
  readonly meta: SnapshotMeta;
  readonly data: Uint8Array;
}

/**
 * A membership change. `changes` enters joint consensus (C_old,new); the leader then proposes
 * the matching `leaveJoint` entry (C_new) by itself once the first is committed.
 */
export type ConfChange =
  | {
      readonly type: 'enterJoint';
      readonly changes: readonly ConfChangeItem[];
      /** Opaque to the core, replicated with the entry (the server's member table: names, URLs). */
      readonly context?: string;
    }
  | { readonly type: 'leaveJoint' };

export interface ConfChangeItem {
  readonly type: 'addVoter' | 'addLearner' | 'remove';
  readonly id: MemberId;
}

export const Role = {
  follower: 'follower',
  preCandidate: 'preCandidate',
  candidate: 'candidate',
  leader: 'leader',
} as const;
export type Role = (typeof Role)[keyof typeof Role];

interface MessageBase {
  readonly from: MemberId;
  readonly to: MemberId;
  readonly term: number;
}

export type RaftMessage =
  | (MessageBase & {
      readonly type: 'append';
      readonly prevIndex: number;
      readonly prevTerm: number;
      readonly entries: readonly Entry[];
      readonly commit: number;
    })
  | (MessageBase & {
      readonly type: 'appendResponse';
      /** On success: the highest index now matching the leader. On reject: the rejected prevIndex. */
      readonly index: number;
      readonly reject: boolean;
      /** On reject: where the leader should probe next, and that entry's term (fast backtracking). */
      readonly rejectHint: number;
      readonly hintTerm: number;
    })
  | (MessageBase & {
      readonly type: 'heartbeat';
      readonly commit: number;
      /** ReadIndex round this heartbeat confirms leadership for (0 = none). */
      readonly readRound: number;
      /**
       * The members the leader heard from within its last election timeout, itself included,
       * ascending: member health as the leader sees it, so followers report the same. Null when
       * the heartbeat carries no view: a leader of peer protocol 2 (before member health
       * travelled) sends none, so its followers learn nothing of it (src/raft/contact.ts).
       */
      readonly contact: readonly MemberId[] | null;
    })
  | (MessageBase & { readonly type: 'heartbeatResponse'; readonly readRound: number })
  | (MessageBase & {
      readonly type: 'vote' | 'preVote';
      readonly lastIndex: number;
      readonly lastTerm: number;
      /** Set when campaigning because of a leader transfer: voters ignore their leader lease. */
      readonly transfer: boolean;
    })
  | (MessageBase & { readonly type: 'voteResponse' | 'preVoteResponse'; readonly reject: boolean })
  | (MessageBase & { readonly type: 'snapshot'; readonly snapshot: Snapshot })
  | (MessageBase & { readonly type: 'timeoutNow' })
  /**
   * A member that restarted asks each peer what it promised that peer before (peer-ledger.ts).
   * Stepped before the term rules: it changes no term and no role. `term` is the asker's own.
   */
  | (MessageBase & { readonly type: 'ledgerQuery' })
  /** The answer: what this member saw the asker promise it, durably (PeerRecord). */
  | (MessageBase & { readonly type: 'ledgerReport'; readonly record: PeerRecord })
  | (MessageBase & { readonly type: 'readIndex'; readonly contexts: readonly number[] })
  /** Follower to leader: commands proposed on a follower, appended by the leader as-is. */
  | (MessageBase & { readonly type: 'propose'; readonly commands: readonly Uint8Array[] })
  /**
   * Back to the follower: forwarded commands that were not appended, so that its requests fail at
   * once instead of waiting out their timeout. The core writes the commands it refused; a driver
   * may cut each to the prefix that names it (its own framing). Steps into no core: drivers
   * take it.
   */
  | (MessageBase & {
      readonly type: 'proposeRefused';
      readonly reason: ForwardRefusal;
      readonly commands: readonly Uint8Array[];
    })
  | (MessageBase & {
      readonly type: 'readIndexResponse';
      readonly contexts: readonly number[];
      /** The read index, or -1 when the leader refused (it lost leadership). */
      readonly index: number;
    });

export type RaftMessageType = RaftMessage['type'];

/**
 * What one member saw a peer promise it, each field only growing. Every message a member sends
 * (pre-votes aside) leaves only once the term it is stamped with is durable, an acknowledged
 * append only once its entries are, and a granted vote only once the vote is: so a peer that
 * restarts with less than this on its disk restarted on an older copy of its data.
 */
export interface PeerRecord {
  /** The highest term seen on a message from the peer. */
  readonly term: number;
  /** The highest (term, index) the peer acknowledged as appended to its log (0, 0: none). */
  readonly ackTerm: number;
  readonly ackIndex: number;
  /** The latest term in which the peer is known to have voted, and for whom (0: none known). */
  readonly voteTerm: number;
  readonly votedFor: MemberId;
}

/** A linearizable read may be served once the local applied index reaches `index`. */
export interface ReadState {
  readonly context: number;
  readonly index: number;
}

export interface SoftState {
  readonly leader: MemberId;
  readonly role: Role;
}

/**
 * One batch of work for the caller (the driver, src/driver/driver.ts). Take it with `ready()`
 * when `hasReady()`, do its I/O in the order below, then hand it back with `advance(ready)`.
 *
 * 1. `softState`: observe (who leads, this node's role); nothing to persist.
 * 2. `appendMessages` may be sent at once, in parallel with the disk write (the leader's appends,
 *    heartbeats, snapshots and TimeoutNow; thesis §10.2.1: the leader counts itself only once
 *    advance() reports its own write durable).
 * 3. Persist, in this order and as one write: `snapshot`, then `entries`, then `hardState`.
 * 4. Only once that write (and every earlier Ready's) is durable, send `messages`: votes and
 *    append acknowledgements promise that what they vouch for survives a crash.
 * 5. Apply `committed` in order, each entry once it is durable on this node's disk; deliver
 *    `readStates` and fail `droppedReads`.
 * 6. Call `advance(ready)`.
 *
 * Several Readys may be out at once (taken before the previous one was advanced): their writes
 * complete, and they are advanced, in the order they were taken. A Ready with nothing to persist
 * still waits for the writes before it (its messages may acknowledge those entries).
 */
export interface Ready {
  /**
   * The leader and this node's role, when either changed since the last Ready (null: unchanged).
   * Volatile: never persisted. The driver keeps it (leaderId, isLeader: a leader sheds forwarded
   * proposals when overloaded) and reports leader changes.
   */
  readonly softState: SoftState | null;
  /**
   * Term, vote and commit index, when any changed (null: unchanged). Persist it with `entries`
   * before `messages` leave. A new term or vote must be durable before anything stamped with it
   * leaves: the core then moves every message of this Ready into `messages` (appendMessages is
   * empty), and the driver holds every later message too until it is written. A change of the
   * commit index alone need not be durable (a restart relearns it from the leader, and the state
   * machine keeps its own applied index): the driver defers it to the next write instead of
   * paying an fsync for it.
   */
  readonly hardState: HardState | null;
  /**
   * A snapshot received from the leader (null: none). It replaces this node's log and state up to
   * `snapshot.meta.index`: persist it before `entries` (which follow it), then, once durable,
   * restore the state machine from it and drop committed entries it covers that are not applied
   * yet. The core has already restored its log, commit and applied index and the membership to
   * the snapshot's. Local snapshots do not come through here: `compact()` returns them.
   */
  readonly snapshot: Snapshot | null;
  /**
   * Log entries to append to stable storage, contiguous and in index order. The first may be at
   * an index already persisted: it replaces that index and every later one (a follower's log
   * overwritten by its leader). The core treats them as durable only from advance(): the leader
   * counts its own copy toward commit from then on; a follower's acknowledgement of them is in
   * `messages`, which wait for the write.
   */
  readonly entries: readonly Entry[];
  /**
   * The leader's replication traffic (append, heartbeat, snapshot, timeoutNow): send at once, in
   * parallel with this Ready's disk write. Empty whenever `hardState` carries a new term or vote.
   */
  readonly appendMessages: readonly RaftMessage[];
  /**
   * Everything else: votes, append and heartbeat acknowledgements, forwarded proposals and reads,
   * read answers, refusals. Send only after this Ready's write (and every earlier one) is durable.
   * Those that promise nothing about this node's disk (propose, proposeRefused, readIndex,
   * readIndexResponse, heartbeatResponse) may leave as soon as the Ready is taken, unless a new
   * term or vote is still being written. A driver may cut each proposeRefused command to the
   * prefix that names it.
   */
  readonly messages: readonly RaftMessage[];
  /**
   * Committed entries to apply, in index order, from right after the previous Ready's last one,
   * at most applyBytesMax of data (the rest comes in the next Ready). Committed means stored by a
   * quorum, not necessarily on this node's disk yet: an entry may be in this same Ready's
   * `entries` (or an earlier Ready's still being written). Apply each only once it is durable
   * here and not being replaced by a write in flight. Configuration entries among them have
   * already changed the core's membership. A proposal's outcome is known when its index is
   * applied: with the term propose() returned it succeeded, with another term it was lost.
   */
  readonly committed: readonly Entry[];
  /**
   * Confirmed linearizable reads: the read with `context` may be served once this node's state
   * machine has applied `index` (its commit index when a quorum confirmed the leadership).
   */
  readonly readStates: readonly ReadState[];
  /**
   * Read contexts that will never complete here (leadership lost before a quorum confirmed it,
   * no leader known, or refused by the leader): fail them now, the client may retry.
   */
  readonly droppedReads: readonly number[];
}

export interface RaftConfig {
  readonly id: MemberId;
  /** Ticks without hearing from a leader before a follower campaigns (randomized up to 2x). */
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  /** In-flight append messages per follower in the replicate state (pipelining window). */
  readonly inflightMessagesMax: number;
  /** Bytes of entry data per append message (batching). */
  readonly appendBytesMax: number;
  /** Bytes of committed entries handed out per Ready. */
  readonly applyBytesMax: number;
  /** Proposed but uncommitted bytes the leader accepts before refusing proposals. */
  readonly uncommittedBytesMax: number;
  readonly preVote: boolean;
  readonly checkQuorum: boolean;
  /**
   * After a restart, ask the peers what this member promised them before voting or
   * acknowledging anything (peer-ledger.ts): a member restarted on an older copy of its data
   * directory finds out, and stays out (`regressed`) instead of breaking its promises.
   */
  readonly ledgerCheck?: boolean;
  /**
   * A commit index that moved with no new entry reaches only the followers that wait for it (they
   * forwarded entries it commits) at once; the others learn it from the next append or heartbeat,
   * or from the notices the driver asks for after a short delay (RaftNode.sendOwedCommitNotices).
   * Under a steady write load the next append follows within that delay, so a round costs each
   * follower one message instead of two.
   */
  readonly deferCommitNotices?: boolean;
  /** Test-only: deliberately broken behaviours that prove the simulator catches them. */
  readonly bugs?: RaftBugs;
}

export interface RaftBugs {
  /** Count replicas of previous-term entries toward commit (Figure 8 violation). */
  readonly commitOldTermEntries?: boolean;
  /** Grant a vote even when one was already given to someone else this term. */
  readonly doubleVote?: boolean;
  /** Hand out entries for apply before they are committed. */
  readonly applyUncommitted?: boolean;
  /** A leader answers a ReadIndex read with its commit index at once, with no quorum round. */
  readonly readWithoutQuorum?: boolean;
  /** Grant votes without persisting them: the hard state a Ready carries never names the vote. */
  readonly voteWithoutPersist?: boolean;
  /** A follower accepts an append whose previous index is past its log end (a gap) and acknowledges it. */
  readonly appendPastGap?: boolean;
  /** With ledgerCheck on: a member whose peers' ledgers say it restarted on older data goes on anyway. */
  readonly ignoreRegressed?: boolean;
}

export const defaultRaftConfig: Omit<RaftConfig, 'id'> = {
  electionTicks: 10,
  heartbeatTicks: 1,
  inflightMessagesMax: 256,
  appendBytesMax: limits.appendBytesMax,
  applyBytesMax: limits.applyBytesMax,
  uncommittedBytesMax: limits.uncommittedBytesMax,
  preVote: true,
  checkQuorum: true,
};

/** What a node recovered from its disk (empty on first boot). */
export interface RecoveredState {
  readonly hardState: HardState;
  /** The latest snapshot; its meta gives the log's starting point and membership. */
  readonly snapshot: Snapshot | null;
  /** Entries after the snapshot, contiguous. */
  readonly entries: readonly Entry[];
  /** Membership on first boot when there is no snapshot (ignored otherwise). */
  readonly initialConfState: ConfState;
  /** The state machine's applied index (entries up to it are not handed out again). */
  readonly appliedIndex: number;
  /** What peers promised this member, as it last kept it on disk (peer-ledger.ts); absent: nothing. */
  readonly ledger?: readonly (readonly [MemberId, PeerRecord])[];
}

export type ProposeResult =
  | { readonly ok: true; readonly index: number; readonly term: number }
  | { readonly ok: false; readonly reason: ProposeRefusal; readonly leader: MemberId };

export type ProposeRefusal =
  | 'notLeader'
  | 'transferring'
  | 'tooLarge'
  | 'confChangePending'
  | 'invalidConfChange';

/** Why forwarded commands were not appended ('overloaded': the leader's driver shed them). */
export type ForwardRefusal = 'notLeader' | 'transferring' | 'tooLarge' | 'overloaded';

export interface RaftStatus {
  readonly id: MemberId;
  readonly term: number;
  readonly vote: MemberId;
  readonly role: Role;
  readonly leader: MemberId;
  readonly commitIndex: number;
  /**
   * The term of the entry at commitIndex. Equal to `term` once an entry of the current leader's
   * term has committed (and, on a follower, is known here): before that, the commit index known
   * here may lag what earlier leaders committed (right after a restart, say).
   */
  readonly commitTerm: number;
  readonly appliedIndex: number;
  readonly lastIndex: number;
  readonly firstIndex: number;
  readonly confState: ConfState;
  readonly progress: ReadonlyMap<MemberId, { match: number; next: number; state: string }>;
  /** After a restart, still asking its peers what it promised them (no vote, no acknowledgement yet). */
  readonly recovering: boolean;
  /**
   * Why this member's data is older than what it promised its peers (null: it is not): it then
   * never votes, campaigns or acknowledges again; an operator replaces it (docs/deploy.md).
   */
  readonly regressed: string | null;
  /**
   * Member health, the same on every member: the members the current leader heard from within
   * its last election timeout (itself included), ascending. The leader's own view; a follower's
   * copy from the leader's latest heartbeat, if that came within an election timeout. Null when
   * this member knows no such view (no leader, or cut off from it): then it vouches for no one.
   * A follower whose leader sends no view (peer protocol 2, during a rolling upgrade) but was
   * heard within an election timeout reports only itself, as members did before protocol 3.
   */
  readonly inContact: readonly MemberId[] | null;
}

/**
 * The Raft core's API. Every method is synchronous and deterministic; all I/O leaves through
 * `ready()`. Create one with `createRaftNode` (src/raft/index.ts).
 */
export interface RaftApi {
  /** Advance logical time by one tick (elections, heartbeats, check-quorum, transfer timeout). */
  tick(): void;
  /** Handle a message from a peer. Messages from stale terms or unknown members are ignored. */
  step(message: RaftMessage): void;
  /** Leader only: append a command. The caller learns the outcome when `index` is applied with
   *  the same `term` (a different term at that index means the proposal was lost). */
  propose(data: Uint8Array): ProposeResult;
  /**
   * Follower side: send a command to the leader for proposal (the caller recognizes its command
   * when it is applied, by an id inside the command). False when no leader is known. A leader that
   * does not append it (it lost leadership, is transferring, or is full) answers proposeRefused;
   * a forward lost on the way still ends in the caller's timeout.
   */
  forwardProposal(data: Uint8Array): boolean;
  /** Leader only: start a membership change (joint consensus); refused while one is pending. */
  proposeConfChange(change: ConfChange): ProposeResult;
  /** Ask for a linearizable read point; answered through Ready.readStates or droppedReads. */
  readIndex(context: number): void;
  /** Leader only: hand leadership to `to` once its log is caught up (TimeoutNow). */
  transferLeadership(to: MemberId): void;
  /** Start an election now (tests, operator tools). */
  campaign(): void;
  /**
   * At boot: a follower that knows no leader moves its election clock to one tick short of the
   * shortest election timeout, so a starting cell's first election begins within the timeout's
   * random part instead of after a whole timeout (etcd's initial election tick advance). Timing
   * never decides safety, and pre-vote keeps a restarted member from unseating a live leader.
   */
  advanceElectionClock(): void;
  /** The transport could not reach `to`: fall back to probing it. */
  reportUnreachable(to: MemberId): void;
  /** The transport finished (ok) or gave up on (failed) sending a snapshot to `to`. */
  reportSnapshot(to: MemberId, ok: boolean): void;
  /** Whether ready() has anything: messages, entries, commits, state changes or read results. */
  hasReady(): boolean;
  /** Leader, deferred commit notices: some follower has not been told the commit index yet. */
  hasOwedCommitNotices(): boolean;
  /** The owed commit notices leave with the next Ready (the driver's short delay ran out). */
  sendOwedCommitNotices(): void;
  /** The next batch of I/O (see Ready for what the caller must do, and in which order). */
  ready(): Ready;
  /**
   * `ready`'s writes are durable (and its messages sent): the leader counts its own entries
   * toward commit from here. Call once per Ready, in the order they were taken.
   */
  advance(ready: Ready): void;
  /**
   * The state machine captured `data` at `index` (≤ applied index): keep it as the snapshot for
   * lagging followers and drop log entries up to `index`. Returns the snapshot, which the caller
   * persists (the core never touches disk).
   */
  compact(index: number, data: Uint8Array): Snapshot;
  /**
   * The metadata a snapshot of the state at applied `index` carries (its term and configuration),
   * without compacting: for a snapshot written elsewhere first and handed to compact() once
   * durable. Null when `index` is not after the current snapshot or not applied yet.
   */
  snapshotMetaAt(index: number): SnapshotMeta | null;
  status(): RaftStatus;
  /**
   * What each peer promised this member (peer-ledger.ts) and a version that grows with every
   * change: the caller keeps it on disk, so that it outlives a restart of this member.
   */
  ledger(): { readonly version: number; readonly records: readonly (readonly [MemberId, PeerRecord])[] };
  /** `peer` cannot answer a ledger query (an older build): recovery stops waiting for it. */
  reportNoLedger(peer: MemberId): void;
  /** RaftStatus.regressed, cheaply (asked on every serializable read). */
  regressed(): string | null;
}
