// The simulator's vocabulary. A run is a pure function of its options: the seed draws the
// scenario, and every random choice after that comes from a per-subsystem fork of the seed.
import type { WatchBugs } from '../watch/index.js';
import type { WatchStats } from './watch-workload.js';
import type { SeededRandom } from '../base/random.js';
import type {
  Entry,
  MemberId,
  RaftApi,
  RaftBugs,
  RaftConfig,
  RaftMessage,
  RecoveredState,
} from '../raft/index.js';
import type { LeaseBugs } from '../lease/lease-config.js';
import type { MvccBugs } from '../mvcc/index.js';
import type { SimNode } from './sim-node.js';

export type { LeaseBugs, MvccBugs };

/** Simulated time in milliseconds since the start of the run. */
export type SimTimeMs = number;

/**
 * The replicated state machine the sim runs on every member. The sim ships a small register/kv
 * machine (register.ts); src/mvcc plugs in here later through the same interface.
 */
export interface Applier {
  /** Apply one committed normal entry (config and no-op entries included, in log order). */
  apply(entry: Entry): void;
  /** The index of the last entry applied (or restored from a snapshot). */
  appliedIndex(): number;
  /** A running hash over every entry applied so far (carried through snapshots). */
  appliedHash(): number;
  /** Serialize the whole state at appliedIndex() for Raft's compaction. */
  snapshot(): Uint8Array;
  /** Replace the state with a snapshot's; appliedIndex() becomes the snapshot's index. */
  restore(data: Uint8Array, index: number): void;
  /** The log index of the last write to `key` (0 when never written): the value's version. */
  readVersion(key: string): number;
}

/** A write the sim's client issues: the state machine decides how it is encoded as a command. */
export interface WriteCommand {
  readonly commandId: number;
  readonly key: string;
}

/**
 * Everything the sim needs from a state machine: fresh instances per member incarnation, and the
 * codec for the client's writes (applied entries are recognized by their command id). The
 * register machine is the default; src/mvcc plugs in with an adapter of this shape.
 */
export interface SimStateMachine {
  createApplier(): Applier;
  encodeWrite(command: WriteCommand): Uint8Array;
  /** The write inside a committed normal entry, or null for anything else (no-ops, others). */
  decodeWrite(data: Uint8Array): WriteCommand | null;
  /**
   * Where a write took effect: the index its first copy applied at (a machine with Request-ID
   * dedup answers a second copy from the first; its value is the first copy's). Absent: a
   * machine without dedup, where every copy takes effect where it is.
   */
  effectiveIndexOf?(commandId: number): number | undefined;
}

/** The shape of one run, drawn from the seed (or given explicitly by tests and the bench). */
export interface Scenario {
  readonly voterCount: 3 | 5;
  readonly learnerCount: 0 | 1;
  /**
   * 'calm' runs have no faults at all; 'mixed' and 'chaos' draw their rates below. 'swarm' (only
   * when asked for) first draws which fault kinds are on at all, then their rates from wide
   * ranges (scenario.ts: drawSwarmScenario), so each seed has its own fault mix.
   */
  readonly profile: 'calm' | 'mixed' | 'chaos' | 'swarm';
  readonly tickMsMin: number;
  readonly tickMsMax: number;
  readonly networkDelayMsMin: number;
  readonly networkDelayMsMax: number;
  readonly lossRate: number;
  readonly duplicateRate: number;
  readonly reorderRate: number;
  /**
   * Swarm runs only (absent otherwise, so older seeds draw and print exactly as before): the
   * probability that a message takes the long tail, an extra delay of up to networkTailMsMax
   * (links stay FIFO, so later traffic on the link queues behind it). Off once the faults end.
   */
  readonly networkTailRate?: number;
  readonly networkTailMsMax?: number;
  /**
   * Swarm runs only (absent otherwise, so other seeds replay as before): now and then the current
   * leader loses every peer link for a long while (durationMs, longer than most lease TTLs) while
   * its clients still reach it: the asymmetric failure in which a deposed leader that does not
   * know it (CheckQuorum off) keeps answering whoever still talks to it.
   */
  readonly leaderIsolation?: {
    readonly everyMs: number;
    /** How long the struck leader has led in its term before it is isolated. */
    readonly servedMs: number;
    readonly durationMsMin: number;
    readonly durationMsMax: number;
  };
  readonly diskLatencyMsMin: number;
  readonly diskLatencyMsMax: number;
  /** Probability that a crash leaves a torn prefix of the write that was in progress. */
  readonly tornWriteRate: number;
  /** Mean simulated ms between fault actions (partition, crash, pause, change, transfer). */
  readonly faultIntervalMs: number;
  readonly faultWeights: FaultWeights;
  /**
   * Probability that a newly elected leader is struck (crash, pause or isolation) within a few
   * network delays: short leaderships that leave partly replicated tails behind (Figure 8).
   */
  readonly leaderChurnRate: number;
  /** Applied entries between two compactions of a member's log. */
  readonly compactEveryEntries: number;
  readonly proposeIntervalMs: number;
  readonly proposeBatchMin: number;
  readonly proposeBatchMax: number;
  /** Share of writes sent through a random member, which forwards them to its leader. */
  readonly forwardRate: number;
  /** Writes a client keeps outstanding per member (clients have bounded concurrency). */
  readonly clientOutstandingMax: number;
  readonly readIntervalMs: number;
  readonly keyCount: number;
  /** Faults run in [0, faultPhaseMs); then everything heals and liveness is measured. */
  readonly faultPhaseMs: number;
  // The core's configuration: small windows and batches exercise flow control and partial
  // batches; PreVote and CheckQuorum are off now and then, since safety must not rest on them.
  readonly inflightMessagesMax: number;
  readonly appendBytesMax: number;
  readonly applyBytesMax: number;
  readonly uncommittedBytesMax: number;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  readonly preVote: boolean;
  readonly checkQuorum: boolean;
  /**
   * The state machine keeps what it applied across a crash (like LMDB with the applied index in
   * the same transaction), so a restart resumes past the snapshot; otherwise it is rebuilt from
   * the snapshot and the log.
   */
  readonly durableStateMachine: boolean;
  /**
   * RaftConfig.deferCommitNotices: commit notices no follower's client waits for wait for the
   * next append (the simulator's own driver sends the owed ones at the member's next tick, the
   * server driver after its delay). Not drawn: odd seeds on, even off (simulate.ts), so every
   * other draw stays as it was.
   */
  readonly deferCommitNotices?: boolean;
}

export interface FaultWeights {
  readonly partition: number;
  readonly crash: number;
  readonly pause: number;
  readonly membership: number;
  readonly transfer: number;
}

export interface SimOptions {
  readonly seed: bigint;
  /** Replace parts of the drawn scenario (bench, demo, focused tests). */
  readonly scenario?: Partial<Scenario>;
  /** Force a profile instead of drawing one. */
  readonly profile?: Scenario['profile'];
  /** Deliberately broken core behaviours (teeth tests). */
  readonly bugs?: RaftBugs;
  /**
   * 'sim' (default): the simulator's own driver in sim-node.ts. 'server': the production driver
   * of src/driver/driver.ts; it is promise-based, so such runs go through simulateAsync.
   */
  readonly driver?: 'sim' | 'server';
  /**
   * How the production driver's members snapshot (server driver only). 'inline' (default): from
   * the state at the applied index, at once. 'background': as a node's snapshot thread does, from
   * a view taken a little later (its index may be past the one that made it due), compacting the
   * log only once the snapshot is durable. 'checkpoint': as a node whose store is its durable
   * state: no snapshots on a schedule; the state machine is made durable at checkpoints (a disk
   * write a few ms after its state was taken), a crash goes back to the last durable one, the log
   * is released below it less a tail, and a leader makes a snapshot from its current state for a
   * follower that needs one.
   */
  readonly snapshots?: 'inline' | 'background' | 'checkpoint';
  /** Deliberately broken driver or client behaviours (teeth tests for the checkers). */
  readonly driverBugs?: DriverBugs;
  /** Simulated ms after the faults stop within which a leader must commit a new proposal and
   *  every member of the configuration must apply it. */
  readonly livenessBudgetMs?: number;
  /** Skip the liveness phase (bench). */
  readonly skipLiveness?: boolean;
  /** Receives one line per event when set (the --trace output). */
  readonly trace?: (line: string) => void;
  /** Called for notable events (elections, crashes, commits) even without a trace: the demo. */
  readonly onEvent?: (event: SimEvent) => void;
  /** The replicated state machine (default: the register machine of register.ts). */
  readonly stateMachine?: SimStateMachine;
  /** Faults at fixed times, on top of (or instead of) the drawn ones: the demo's leader crash. */
  readonly script?: readonly ScriptedFault[];
  /**
   * Opt-in fault (not in the plain sweep until members detect it: docs/design/older-copy.md):
   * during the faults, a member's durable state is copied, and later the member is crashed and
   * restarted on that older copy. The sim's own driver with a state machine rebuilt from the log.
   */
  readonly olderCopy?: boolean;
  /**
   * Members run the peer-ledger check after each restart (RaftConfig.ledgerCheck, on in real
   * nodes). Opt-in here so that seeds replay as they did before it existed; on with olderCopy.
   */
  readonly ledgerCheck?: boolean;
  /** Emit a 'progress' event this often (simulated ms). */
  readonly progressEveryMs?: number;
  /** Stop after this many steps even if time remains (a guard against runaway runs). */
  readonly stepsMax?: number;
  /**
   * 'kv' (default): the register/kv client. 'leases': the kv client plus lease holders (grant,
   * attach keys, renew on schedule or abandon) against the production lease service, on the
   * MVCC store; needs the server driver. See lease-workload.ts and lease-checker.ts.
   */
  readonly workload?: 'kv' | 'leases' | 'locks';
  /** Deliberately broken lease rules (teeth tests for the lease checker). */
  readonly leaseBugs?: LeaseBugs;
  /** Deliberately broken lock rules (teeth tests for the lock checker). */
  readonly lockBugs?: { readonly grantOnWake?: boolean; readonly withdrawRetriedEntry?: boolean };
  /** Deliberately broken watch rules (teeth tests for the watch checker; lock workload runs). */
  readonly watchBugs?: WatchBugs;
  /**
   * Deliberately broken MVCC store rules, for the MVCC store simulate() creates (the lease and
   * lock workloads'); a caller passing its own `stateMachine` builds it with them instead.
   */
  readonly storeBugs?: MvccBugs;
  /**
   * Lease and lock runs: every member's store starts with a tenant owning the lease workload's
   * keys, with limits the workload reaches; a checker verifies after every applied entry that no
   * hard quota grew past its limit and that the stored use matches the keys (#28).
   */
  readonly tenants?: boolean;
}

export interface Violation {
  readonly invariant: string;
  readonly step: number;
  readonly timeMs: SimTimeMs;
  readonly detail: string;
}

export interface SimResult {
  readonly seed: bigint;
  readonly scenario: Scenario;
  readonly violations: readonly Violation[];
  readonly steps: number;
  readonly timeMs: SimTimeMs;
  readonly stats: SimStats;
}

export interface SimStats {
  proposals: number;
  acknowledged: number;
  /** Entries applied by the member that was leader when it applied them (throughput). */
  committedOnLeader: number;
  reads: number;
  readsServed: number;
  elections: number;
  crashes: number;
  partitions: number;
  /** Leader isolations (scenario.leaderIsolation) begun. */
  leaderIsolations: number;
  pauses: number;
  membershipChanges: number;
  transfers: number;
  snapshotsSent: number;
  messagesDelivered: number;
  messagesDropped: number;
  /** Simulated ms from the end of the faults until the liveness probe converged (-1: none). */
  livenessMs: number;
  /** Members that found, through the peer ledger, that they restarted on older data (ledgerCheck). */
  regressedMembers: number;
  /** The lease workload's counts (runs with workload 'leases' only). */
  leases?: LeaseStats;
  /** The lock workload's counts (runs with workload 'locks' only). */
  locks?: LockStats;
  /** The watch workload's counts (runs with workload 'locks' only). */
  watches?: WatchStats;
  /** The tenant checker's counts (runs with `tenants` only): entries checked and refused, per member. */
  tenants?: { checked: number; refusals: number };
}

export interface LockStats {
  acquires: number;
  grants: number;
  /** Waits that ended without the lock (try-lock, or the wait elapsed). */
  heldErrors: number;
  leaseLost: number;
  /** Holders frozen past their TTL while holding. */
  freezes: number;
  /** Waiters woken by their predecessor's deletion (on any member). */
  wakeups: number;
  gaveUp: number;
}

export interface LeaseStats {
  granted: number;
  /** Renewals the holder heard answered with a TTL. */
  renewalsAcked: number;
  /** Renewals acknowledged by a leader of a later term than the lease's previous renewal. */
  renewalsAcrossLeaders: number;
  renewalsFailed: number;
  keysAttached: number;
  /** Leases the leader expired (revocations applied). */
  expired: number;
  /** Leases abandoned by their holders. */
  abandoned: number;
}

/** Notable events for the demo cell and progress output. */
export type SimEvent =
  | {
      readonly type: 'leader';
      readonly timeMs: number;
      readonly member: MemberId;
      readonly term: number;
    }
  | { readonly type: 'crash'; readonly timeMs: number; readonly member: MemberId }
  | { readonly type: 'restart'; readonly timeMs: number; readonly member: MemberId }
  | {
      readonly type: 'progress';
      readonly timeMs: number;
      readonly leader: MemberId;
      readonly term: number;
      readonly commitIndex: number;
      readonly acknowledged: number;
    }
  | { readonly type: 'fault'; readonly timeMs: number; readonly description: string };

export interface ScriptedFault {
  readonly atMs: SimTimeMs;
  readonly fault: 'crashLeader' | 'restartCrashed' | 'isolateLeader' | 'heal';
}

export interface DriverBugs {
  /** Send votes and append acknowledgements before the disk write completes. */
  readonly messagesBeforeDurable?: boolean;
  /** Serve reads from the local state machine without a ReadIndex round. */
  readonly localReads?: boolean;
  /** Never tell the core how a snapshot transfer ended (a liveness bug, not a safety one). */
  readonly noSnapshotReports?: boolean;
}

// --- the world's internals, shared by its parts -------------------------------------------

export type WorldEvent =
  | { readonly type: 'tick'; readonly member: MemberId; readonly incarnation: number }
  | { readonly type: 'deliver'; readonly message: RaftMessage }
  | {
      readonly type: 'diskDone';
      readonly member: MemberId;
      readonly incarnation: number;
      readonly writeId: number;
    }
  | {
      readonly type: 'snapshotReport';
      readonly member: MemberId;
      readonly to: MemberId;
      readonly ok: boolean;
    }
  | { readonly type: 'unreachable'; readonly member: MemberId; readonly to: MemberId }
  | { readonly type: 'action'; readonly name: string; readonly run: () => void };

export type CoreFactory = (
  config: RaftConfig,
  recovered: RecoveredState,
  random: SeededRandom,
) => RaftApi;

export interface WorldRandoms {
  readonly network: SeededRandom;
  readonly disk: SeededRandom;
  readonly cores: SeededRandom;
  readonly ticks: SeededRandom;
}

export interface WorldHooks {
  onApplied(node: SimNode, entry: Entry, chain: number): void;
  onReadServed(node: SimNode, context: number): void;
  onReadDropped(node: SimNode, context: number): void;
}
