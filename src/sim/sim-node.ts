// One simulated member: its core, disk, state machine and the checkers' taps on them. A driver
// (sim-driver.ts, or the production one through server-driver.ts) moves Ready batches between the
// core and the world; every Ready passes observe(), every message sendMessages(), every applied
// entry applyEntry(), so the checkers see the same things whichever driver runs.
import type { SimWatchEnv } from './watch-member.js';
import { assert } from '../base/assert.js';
import type {
  Entry,
  HardState,
  MemberId,
  RaftApi,
  RaftMessage,
  Ready,
  RecoveredState,
  Role,
  Snapshot,
} from '../raft/index.js';
import type { SafetyChecker } from './checker.js';
import { CommitSource } from './checker.js';
import type { SimDisk } from './disk.js';
import { emptyHardState } from './disk.js';
import { MirrorLog } from './mirror-log.js';
import type { SimLeaseEnv } from './lease-member.js';
import type { SimLockEnv } from './lock-member.js';
import { ServerDriverBinding } from './server-driver.js';
import { SimDriver } from './sim-driver.js';
import { describeReady } from './trace.js';
import type { Applier, Scenario, WorldEvent } from './types.js';

/** What a member needs from the world around it. */
export interface NodeWorld {
  readonly nowMs: number;
  readonly tracing: boolean;
  /** Test-only: break the Ready contract by sending messages before the disk write. */
  readonly messagesBeforeDurable: boolean;
  readonly checker: SafetyChecker;
  readonly scenario: Scenario;
  /** Drive members with the production driver (src/driver/driver.ts) instead of this file's. */
  readonly serverDriver: boolean;
  /** The production driver's members write snapshots as a snapshot thread does (server-driver.ts). */
  readonly backgroundSnapshots: boolean;
  /**
   * The production driver's members checkpoint their state machine instead of snapshotting it:
   * a crash leaves the state of the last durable checkpoint (server-driver.ts).
   */
  readonly checkpointSnapshots: boolean;
  /** The lease workload's hooks into each member's lease service (null: no lease workload). */
  readonly leases: SimLeaseEnv | null;
  /** The lock workload's hooks into each member's lock service (null: no lock workload). */
  readonly locks: SimLockEnv | null;
  /** The watch workload's hooks into each member's watch hub (null: no watchers). */
  readonly watches: SimWatchEnv | null;
  at(atMs: number, name: string, run: () => void): void;
  /** Keeps an event for a paused member until it resumes (a stopped process runs it then). */
  hold(node: SimNode, event: WorldEvent): void;
  traceNode(node: SimNode, text: string): void;
  send(node: SimNode, messages: readonly RaftMessage[]): void;
  scheduleDiskDone(node: SimNode, writeId: number, atMs: number): void;
  onBecameLeader(node: SimNode, term: number): void;
  /** An entry was applied on `node` (client acknowledgements hang off this). */
  onApplied(node: SimNode, entry: Entry, chain: number): void;
  onReadServed(node: SimNode, context: number): void;
  onReadDropped(node: SimNode, context: number): void;
  report(invariant: string, detail: string): void;
}

export type NodeState = 'running' | 'paused' | 'crashed' | 'removed';

/** What drives one incarnation's core: the sim's own driver or the production one. */
export interface MemberDriver {
  pump(): void;
  /** A tick of the member's clock, after the core's (optional work on the member's timer). */
  tick?(): void;
  onDiskDone(writeId: number): void;
  stop(): void;
}

/** A durable state machine's contents, at the index it had applied. */
export interface KeptState {
  readonly data: Uint8Array;
  readonly index: number;
}

export interface PendingProposal {
  readonly term: number;
  readonly commandId: number;
  readonly key: string;
}

export class SimNode {
  state: NodeState = 'crashed';
  incarnation = 0;
  core: RaftApi | null = null;
  role: Role = 'follower';
  leader: MemberId = 0;
  /** The last hard state seen in this lifetime (the durable one right after a restart). */
  hard: HardState = emptyHardState;
  readonly log = new MirrorLog();
  /** Proposals this member accepted as leader, by index, until applied or lost. */
  readonly proposals = new Map<number, PendingProposal>();
  /** Command ids this member forwarded to its leader, until it applies them. */
  readonly forwarded = new Set<number>();
  private driver: MemberDriver | null = null;
  /** What a durable state machine held when the member last crashed (see Scenario). */
  private keptState: KeptState | null = null;

  constructor(
    readonly id: MemberId,
    readonly disk: SimDisk,
    private applier: Applier,
    private readonly world: NodeWorld,
    private readonly compactEveryEntries: number,
  ) {}

  get appliedIndex(): number {
    return this.applier.appliedIndex();
  }

  get commitIndex(): number {
    return this.hard.commit;
  }

  readVersion(key: string): number {
    return this.applier.readVersion(key);
  }

  /** The state a durable state machine kept through the last crash, if it is past `index`. */
  keptStatePast(index: number): KeptState | null {
    const kept = this.keptState;
    if (kept === null) return null;
    // A checkpointed store covers the log's start when it is at it (the log was released below it).
    if (this.world.checkpointSnapshots) return kept.index >= index ? kept : null;
    return kept.index > index ? kept : null;
  }

  /** A checkpoint of the state machine became durable (checkpointing members only). */
  checkpointed(state: KeptState): void {
    assert(this.world.checkpointSnapshots, 'only checkpointing members keep checkpoints');
    if (this.keptState === null || state.index >= this.keptState.index) this.keptState = state;
  }

  /** Start (or restart) from what the disk kept, with a fresh core and state machine. */
  boot(recovered: RecoveredState, core: RaftApi, applier: Applier, kept: KeptState | null): void {
    this.incarnation++;
    this.state = 'running';
    this.core = core;
    this.applier = applier;
    this.role = 'follower';
    this.leader = 0;
    this.hard = recovered.hardState;
    this.proposals.clear();
    this.forwarded.clear();
    const snapshot = recovered.snapshot;
    if (kept !== null) {
      assert(kept.index === recovered.appliedIndex, 'the core resumes where the state machine is');
      applier.restore(kept.data, kept.index);
      this.world.checker.onApplied(this.id, kept.index, applier.appliedHash());
    } else if (snapshot !== null) {
      applier.restore(snapshot.data, snapshot.meta.index);
      this.world.checker.onApplied(this.id, snapshot.meta.index, applier.appliedHash());
    }
    const base = snapshot?.meta.index ?? 0;
    const baseTerm = snapshot?.meta.term ?? 0;
    this.log.reset(base, baseTerm, this.world.checker.chainOf(base, baseTerm) ?? 0);
    this.log.append(recovered.entries, (index, term, chain) =>
      this.world.checker.onLogEntry(this.id, index, term, chain),
    );
    this.checkRecovered(recovered, core);
    const world = this.world;
    const every = this.compactEveryEntries;
    this.driver = world.serverDriver
      ? new ServerDriverBinding(this, world, core, applier, every)
      : new SimDriver(this, world, core, applier, every, base);
    this.pump();
  }

  /** The production driver of this incarnation, when the run uses it. */
  get serverDriver(): ServerDriverBinding | null {
    return this.driver instanceof ServerDriverBinding ? this.driver : null;
  }

  /** A restarted core starts from its durable hard state, never from less. */
  private checkRecovered(recovered: RecoveredState, core: RaftApi): void {
    const status = core.status();
    const durable = recovered.hardState;
    if (status.commitIndex < durable.commit) {
      this.world.report(
        'commit monotonic',
        `member ${this.id} restarted at commit ${status.commitIndex}, below its durable ${durable.commit}`,
      );
    }
    if (status.term !== durable.term || status.vote !== durable.vote) {
      this.world.report(
        'term monotonic',
        `member ${this.id} restarted at term ${status.term} vote ${status.vote}, ` +
          `durable ${durable.term}/${durable.vote}`,
      );
    }
  }

  crash(): void {
    assert(this.state !== 'removed', 'a removed member stays down');
    const applied = this.applier.appliedIndex();
    // A durable state machine (a process crash: the page cache kept every commit) keeps what it
    // applied; a checkpointing one otherwise keeps only its last durable checkpoint.
    if (this.world.scenario.durableStateMachine && applied > 0 && this.state !== 'crashed') {
      this.keptState = { data: this.applier.snapshot(), index: applied };
    }
    this.state = 'crashed';
    this.core = null;
    this.driver?.stop();
    this.driver = null;
    this.proposals.clear();
    this.forwarded.clear();
    this.role = 'follower';
  }

  /** Let the driver move whatever the core has ready (after any input to the core). */
  pump(): void {
    if (this.core === null || this.state !== 'running') return;
    this.driver?.pump();
  }

  onDiskDone(writeId: number): void {
    this.driver?.onDiskDone(writeId);
  }

  /** The member's timer fired (after the core's tick and a pump). */
  onTick(): void {
    if (this.core === null || this.state !== 'running') return;
    this.driver?.tick?.();
  }

  /** Mirror the Ready into the checkers' view before anything leaves the member. */
  observe(ready: Ready): void {
    const checker = this.world.checker;
    if (ready.snapshot !== null) {
      const meta = ready.snapshot.meta;
      this.log.reset(meta.index, meta.term, checker.chainOf(meta.index, meta.term) ?? 0);
    }
    this.log.append(ready.entries, (index, term, chain) =>
      checker.onLogEntry(this.id, index, term, chain),
    );
    if (ready.hardState !== null) {
      checker.onHardState(this.id, this.hard, ready.hardState, this.log);
      this.hard = ready.hardState;
    }
    if (ready.softState !== null) {
      const wasLeader = this.role === 'leader';
      this.role = ready.softState.role;
      this.leader = ready.softState.leader;
      if (this.role === 'leader' && !wasLeader) {
        const term = (this.core as RaftApi).status().term;
        checker.onLeader(this.id, term, this.log);
        this.world.onBecameLeader(this, term);
      }
    }
    if (this.world.tracing && ready.entries.length + ready.committed.length > 0) {
      this.world.traceNode(this, describeReady(ready));
    }
  }

  /** Messages leave through here, where every granted vote is recorded. */
  sendMessages(messages: readonly RaftMessage[]): void {
    for (const message of messages) {
      if (message.type === 'voteResponse' && !message.reject) {
        this.world.checker.onVoteGranted(message.from, message.to, message.term);
      }
    }
    this.world.send(this, messages);
  }

  installSnapshot(snapshot: Snapshot): void {
    this.applier.restore(snapshot.data, snapshot.meta.index);
    this.world.checker.onApplied(this.id, snapshot.meta.index, this.applier.appliedHash());
    this.world.traceNode(this, `install snapshot ${snapshot.meta.index}/${snapshot.meta.term}`);
  }

  /** Apply one committed entry; returns its log-prefix hash, or null when a checker refused it. */
  applyEntry(entry: Entry): number | null {
    const applied = this.applier.appliedIndex();
    if (entry.index !== applied + 1) {
      this.world.report(
        'apply in order',
        `member ${this.id} applies ${entry.index} after ${applied}`,
      );
      return null;
    }
    const chain = this.log.chainAt(entry.index);
    if (chain === undefined || this.log.termAt(entry.index) !== entry.term) {
      const where = `${entry.index}/${entry.term}`;
      this.world.report('apply matches log', `member ${this.id} applies ${where} not in its log`);
      return null;
    }
    this.applier.apply(entry);
    const checker = this.world.checker;
    checker.onCommitted(
      entry.index,
      entry.term,
      chain,
      this.hard.term,
      CommitSource.applied,
      this.id,
    );
    checker.onApplied(this.id, entry.index, this.applier.appliedHash());
    this.world.onApplied(this, entry, chain);
    return chain;
  }
}
