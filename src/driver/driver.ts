// The node's driver: it feeds the Raft core ticks, messages and proposals, and performs each
// Ready's I/O in the order Raft's safety needs: leader appends leave at once (in parallel with
// the disk write), then the disk, then votes and acknowledgements, then apply, then advance.
// Up to `readysInFlightMax` Readys may be on their way to disk at once (the WAL group-commits
// them); they complete strictly in order. Committed entries are applied as soon as they are on
// this node's disk, without waiting for the writes of newer entries.
import { randomBytes } from 'node:crypto';
import { assert } from '../base/assert.js';
import * as limits from '../base/limits.js';
import { TimeoutError, UnavailableError, OverloadedError } from '../base/errors.js';
import { ForwardGate } from './forward-gate.js';
import {
  EntryType, type ConfChange, type Entry, type HardState, type MemberId, type ProposeResult, type RaftApi, type RaftMessage,
  type RaftStatus, type Ready, type Role, type SnapshotMeta,
} from '../raft/index.js';
import { frameCommand, frameHead, proposalIdOfHead, unframeCommand } from './entry-frame.js';
import { CheckpointPolicy, type CheckpointOptions } from './checkpoint-policy.js';
import type { DriverListener, LogStore, PeerSender, StateMachine, Timers } from './types.js';

export interface DriverOptions {
  readonly requestTimeoutMs: number;
  /** Proposals waiting for their outcome; beyond it new ones are refused (429 overloaded). */
  readonly proposalsPendingMax?: number;
  /** Bytes of proposals forwarded to the leader and not answered yet (limits.forwardedBytesMax). */
  readonly forwardedBytesMax?: number;
  /**
   * How long a write may wait, first come first served, for room under forwardedBytesMax before
   * it is refused unsent (429); default requestTimeoutMs / 2 (src/driver/forward-gate.ts).
   */
  readonly forwardWaitMsMax?: number;
  /** Take a snapshot (and release the log below it) every this many applied entries... */
  readonly snapshotEntries: number;
  /** ...or once this many bytes of entries were written since the last one (default 64 MiB). */
  readonly snapshotLogBytes?: number;
  /**
   * Where in each run of `snapshotEntries` indexes this member snapshots (default 0: at the
   * multiples). Members with different phases do not all encode and fsync a whole-store snapshot at
   * the same moment, which stalled the cell's disk and every member's CPU at once.
   */
  readonly snapshotPhase?: number;
  /**
   * A snapshot rewrites the whole store (all of its history), so its cost grows with the store
   * while the interval above does not: a member waits until the log written since its last
   * snapshot is at least this fraction of that snapshot's size (default 1: snapshots write at
   * most as many bytes as the log, and the log kept is at most about one snapshot's size). Known
   * only for snapshots written in the background (LogStore.snapshotInBackground reports the size).
   */
  readonly snapshotLogRatio?: number;
  /** The size of the snapshot this member started from (its first wait; default 0: none). */
  readonly startSnapshotBytes?: number;
  /**
   * With a log store that checkpoints (LogStore.checkpoint): when to checkpoint and how much log
   * to keep below it. Then no periodic snapshot is taken (the snapshot options above are unused).
   */
  readonly checkpoint?: CheckpointOptions;
  /**
   * Readys handed to the log store and not yet completed (default 1: each waits for the one
   * before). More lets commits and applies proceed while newer entries are being synced (1-client
   * put p50 about 30% lower in the bench).
   */
  readonly readysInFlightMax?: number;
  /**
   * With the core's deferCommitNotices: how long followers may wait for a commit index that no
   * append has carried to them yet, ms (default 2). Under load the next append comes sooner and
   * carries it, so each round costs a follower one message and one wake-up instead of two.
   */
  readonly commitNoticeDelayMs?: number;
  /**
   * A leader whose oldest uncommitted entry has waited this long refuses new proposals (its own:
   * 429 overloaded; forwarded ones go back refused, and their followers answer 429 at once). Default
   * requestTimeoutMs / 2. Without it an overloaded leader queues more than it can commit within
   * the clients' timeout: every proposal then times out before it commits, clients send new
   * ones, and nothing is acknowledged again (the sim's seed 6876, chaos, found this).
   */
  readonly uncommittedAgeMsMax?: number;
  /**
   * The first linearizable-read context of this incarnation (default: random below 2^48). Contexts
   * must not repeat across restarts: a leader's late answer to the previous incarnation's read
   * would otherwise serve this one's read with an older read index (a stale read; the simulator's
   * seed 40029, chaos, --driver server, found it).
   */
  readonly readContextStart?: number;
}

export interface ProposeOptions {
  /**
   * Not shed by the leader's age bound (uncommittedAgeMsMax): a small command that keeps a promise
   * made elsewhere, sent at a bounded rate (a move's lease renewals carried to the destination:
   * shed while its disk is slow, the lease ends there and deletes keys whose owner renews in
   * time). Forwarded by a follower it has no such pass: its sender tries the leader too.
   */
  readonly urgent?: boolean;
}

export interface DriverEvents {
  /** A Ready's I/O failed: the node must stop (a failed fdatasync cannot be retried safely). */
  onFatal(error: Error): void;
}

interface ProposalWaiter<Outcome> {
  resolve(outcome: Outcome): void;
  reject(error: Error): void;
  cancelTimer(): void;
  /** Its framed size when this follower forwarded it to the leader, else 0. */
  forwardedBytes: number;
  /** Set while it waits in the forward gate's queue for room (not sent yet). */
  queued: boolean;
}

/** A Ready handed to the disk (or with nothing to write) that has not completed yet. */
interface InFlightReady {
  /** Its place in the order the core handed Readys out (1, 2, ...): they finish in that order. */
  readonly seq: number;
  readonly ready: Ready;
  persisted: boolean;
  /** The Ready's messages that wait for its write (and every earlier one) to be durable. */
  readonly messages: readonly RaftMessage[];
  /** It carries a new term or vote: nothing stamped with it may leave before it is durable. */
  readonly termChange: boolean;
}

/**
 * Messages that promise nothing about this node's disk: a follower's forwarded proposals and reads,
 * a leader's read-index answers, heartbeat acknowledgements. They leave when their Ready is taken
 * instead of waiting for earlier writes (up to an fsync per hop saved on forwarded requests).
 */
const promiseFreeTypes: ReadonlySet<RaftMessage['type']> = new Set([
  'propose', 'proposeRefused', 'readIndex', 'readIndexResponse', 'heartbeatResponse',
] as const);

interface ReadWaiter {
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
  readonly cancelTimer: () => void;
  /** Set once the leader confirmed the read point; served when applied reaches it. */
  index: number;
}

export class NodeDriver<Outcome> {
  /** Readys in hand-off order; the head completes first. */
  private readonly inFlight: InFlightReady[] = [];
  /** Committed entries handed out by the core and not applied yet, in index order. */
  private toApply: Entry[] = [];
  private stopped = false;
  private leader: MemberId = 0;
  private role: Role = 'follower';
  private nextReadContext: number;
  private readonly proposals = new Map<string, ProposalWaiter<Outcome>>();
  /** A follower's forwarded bytes in flight (the sum of the pending proposals' forwardedBytes) and the queue before them. */
  private readonly forwardGate: ForwardGate;
  private readonly reads = new Map<number, ReadWaiter>();
  /** Confirmed reads waiting for apply, in ascending read-index order of arrival. */
  private confirmedReads: number[] = [];
  private lastSnapshotIndex: number;
  private snapshotInFlight = false;
  private logBytesSinceSnapshot = 0;
  /** The size of the last snapshot this member wrote or started from (0: unknown, no wait). */
  private lastSnapshotBytes: number;
  /** The applied index at which enough log had been written for the next snapshot (null: not yet). */
  private snapshotAllowedFrom: number | null = null;
  /** Proposal ids: a random per-process prefix and a counter (unique without a syscall each). */
  private readonly proposalIdPrefix = randomBytes(8);
  private proposalCounter = 0n;
  /** The hard state last handed to the disk, and a commit-only change still waiting for a write. */
  private syncedHardState: HardState | null = null;
  private deferredHardState: HardState | null = null;
  /** The last log index on this node's disk (the WAL), as of completed writes. */
  private durableIndex: number;
  /**
   * While leader: the last index and hand-out time of each Ready's new entries not yet known
   * committed, oldest first (the age of the oldest is the leader's queueing delay).
   */
  private uncommittedMarks: { lastIndex: number; atMs: number }[] = [];
  private readonly uncommittedAgeMsMax: number;
  /** Readys taken from the core, and finished (their messages sent), so far: see finish(). */
  private readysTaken = 0;
  private readysFinished = 0;
  /** In-flight Readys with a new term or vote (then every message waits for its turn). */
  private termChangesInFlight = 0;
  /** Forwarded commands refused (not appended) because this leader was overloaded. */
  forwardedRefused = 0;
  /** State machine batches applied (each one write transaction). */
  applyBatches = 0;
  /** Set when the log store checkpoints the state machine instead of snapshotting it. */
  private readonly checkpoints: CheckpointPolicy | null;
  /** The deferred commit notices' delay is running (see DriverOptions.commitNoticeDelayMs). */
  private commitNoticeTimer: { cancel(): void } | null = null;
  /** A pump is scheduled through timers.soon (cleared by any pump). */
  private pumpSoon = false;
  /** Set by start(): who hears applied batches, restores and leader changes. */
  private listeners: readonly DriverListener<Outcome>[] | null = null;

  constructor(
    private readonly core: RaftApi,
    private readonly logStore: LogStore,
    private readonly stateMachine: StateMachine<Outcome>,
    private readonly peers: PeerSender,
    private readonly timers: Timers,
    private readonly options: DriverOptions,
    private readonly events: DriverEvents,
  ) {
    this.lastSnapshotIndex = core.status().firstIndex - 1;
    this.lastSnapshotBytes = options.startSnapshotBytes ?? 0;
    this.checkpoints = logStore.checkpoint !== undefined && options.checkpoint !== undefined
      ? new CheckpointPolicy(options.checkpoint, stateMachine.appliedIndex())
      : null;
    this.durableIndex = core.status().lastIndex;
    this.uncommittedAgeMsMax = options.uncommittedAgeMsMax ?? options.requestTimeoutMs / 2;
    this.forwardGate = new ForwardGate(options.forwardedBytesMax ?? limits.forwardedBytesMax, options.forwardWaitMsMax ?? options.requestTimeoutMs / 2);
    this.nextReadContext = options.readContextStart ?? randomBytes(6).readUIntBE(0, 6) + 1;
    assert(Number.isSafeInteger(this.nextReadContext) && this.nextReadContext > 0, 'read contexts are positive safe integers');
  }

  /**
   * The services that hear what the driver did, in this order, for the driver's whole life. Until
   * then nothing may feed it: an entry applied before would go unheard by them.
   */
  start(listeners: readonly DriverListener<Outcome>[]): void {
    assert(this.listeners === null, 'a driver is started once');
    this.listeners = listeners;
  }

  /** Proposals of this node waiting for their entry's outcome (etcd_server_proposals_pending). */
  get pendingProposals(): number {
    return this.proposals.size;
  }

  get leaderId(): MemberId {
    return this.leader;
  }

  /** The Raft core's state (the driver is the core's only caller). */
  status(): RaftStatus {
    return this.core.status();
  }

  /** Why this member's data went back in time (src/raft/peer-ledger.ts), or null. */
  regressed(): string | null {
    return this.core.regressed();
  }

  /**
   * Leader only: start a membership change. It leaves at the next pump (flush() sends it now), so
   * the caller can first learn the new member's address for the message that goes to it.
   */
  proposeConfChange(change: ConfChange): ProposeResult {
    this.assertStarted();
    const result = this.core.proposeConfChange(change);
    if (result.ok) this.schedulePump();
    return result;
  }

  /** The Raft metadata of applied index `index` while the log still holds it (else null). */
  snapshotMetaAt(index: number): SnapshotMeta | null {
    return this.core.snapshotMetaAt(index);
  }

  /** Leader only: hand leadership to `to` once its log is caught up. */
  transferLeadership(to: MemberId): void {
    this.assertStarted();
    this.core.transferLeadership(to);
    this.schedulePump();
  }

  /** The transport could not reach `to` (the core probes it instead of streaming). */
  /** `to` runs a build without the peer ledger: a restarted member stops waiting for its answer. */
  reportNoLedger(to: MemberId): void {
    this.core.reportNoLedger(to);
    this.schedulePump();
  }

  reportUnreachable(to: MemberId): void {
    if (this.stopped) return;
    this.core.reportUnreachable(to);
  }

  /** The transport finished (ok) or gave up on sending a snapshot to `to`. */
  reportSnapshot(to: MemberId, ok: boolean): void {
    if (this.stopped) return;
    this.core.reportSnapshot(to, ok);
    this.schedulePump();
  }

  private assertStarted(): void {
    assert(this.listeners !== null, 'the driver is started before it is fed');
  }

  get isLeader(): boolean {
    return this.role === 'leader';
  }

  tick(): void {
    if (this.stopped) return;
    this.assertStarted();
    this.core.tick();
    // Writes waiting for room to be forwarded: past their wait, or this member leads now.
    this.sendWaiting();
    // A timer callback: the heartbeats leave with the rest of this turn's traffic (see pump).
    this.pump(false);
    this.checkpoints?.tick();
    this.maybeCheckpoint();
  }

  /** At boot (RaftApi.advanceElectionClock): the first election starts sooner; nothing is sent now. */
  advanceElectionClock(): void {
    if (this.stopped) return;
    this.assertStarted();
    this.core.advanceElectionClock();
  }

  receive(messages: readonly RaftMessage[]): void {
    if (this.stopped) return;
    this.assertStarted();
    for (const message of messages) {
      if (message.type === 'proposeRefused') {
        this.failRefused(message);
        continue;
      }
      if (message.type === 'propose' && this.role === 'leader' && this.overloaded()) {
        // Shed, and said so: the follower answers its clients 429 now, not at its timeout.
        this.forwardedRefused += message.commands.length;
        const { from, to, term, commands } = message;
        this.peers.send([{ type: 'proposeRefused', from: to, to: from, term, reason: 'overloaded', commands: commands.map(frameHead) }]);
        continue;
      }
      this.core.step(message);
    }
    this.schedulePump();
  }

  /** Hands out everything pending now instead of at the next timers.soon (the simulator's step). */
  flush(): void {
    if (this.stopped) return;
    this.pump(true);
  }

  /** A fresh 16-byte id for propose(). */
  newProposalId(): Uint8Array {
    const id = Buffer.allocUnsafe(16);
    this.proposalIdPrefix.copy(id, 0);
    id.writeBigUInt64BE(++this.proposalCounter, 8);
    return id;
  }

  /**
   * Replicate `command` and resolve with the state machine's outcome once this node applied it.
   * Rejects with UnavailableError when no leader is known (nothing was proposed) and with
   * TimeoutError when the outcome is unknown (it may still commit: retry with the Request-ID).
   */
  propose(proposalId: Uint8Array, command: Uint8Array, options: ProposeOptions = {}): Promise<Outcome> {
    if (this.stopped) return Promise.reject(new UnavailableError('the node is stopping'));
    this.assertStarted();
    if (this.proposals.size >= (this.options.proposalsPendingMax ?? limits.proposalsPendingMax)) {
      return Promise.reject(new OverloadedError('too many proposals in flight on this node; retry later'));
    }
    if (this.role === 'leader' && options.urgent !== true && this.overloaded()) {
      return Promise.reject(new OverloadedError('the leader is behind: its oldest uncommitted entry waits too long; retry later'));
    }
    const data = frameCommand(proposalId, command);
    // A view, not a copy (ids from newProposalId are Buffers already).
    const key = Buffer.from(proposalId.buffer, proposalId.byteOffset, proposalId.byteLength).toString('hex');
    assert(!this.proposals.has(key), 'proposal ids are unique');
    let forwardedBytes = 0;
    let queued = false;
    if (this.role === 'leader') {
      const result = this.core.propose(data);
      if (!result.ok) return Promise.reject(refusalError(result.reason));
    } else {
      const admission = this.forwardGate.admit(data.byteLength);
      if (admission === 'full') {
        return Promise.reject(new OverloadedError('this member has too many bytes of writes forwarded to the leader or waiting to be; retry shortly'));
      }
      if (admission === 'queue') {
        this.forwardGate.enqueue(key, data, this.timers.monotonicMs());
        queued = true;
      } else {
        if (!this.core.forwardProposal(data)) return Promise.reject(new UnavailableError('no leader', { leader: this.leader }));
        forwardedBytes = data.byteLength;
        this.forwardGate.sent(forwardedBytes);
      }
    }
    const promise = new Promise<Outcome>((resolve, reject) => {
      const timer = this.timers.setTimeout(() => {
        const waiter = this.takeProposal(key);
        reject(waiter?.queued === true
          ? new OverloadedError('this member could not forward the write in time (too many bytes ahead of it); it was not sent: retry')
          : new TimeoutError('the outcome is unknown: retry with the same Request-ID'));
      }, this.options.requestTimeoutMs);
      this.proposals.set(key, { resolve, reject, cancelTimer: () => timer.cancel(), forwardedBytes, queued });
    });
    this.schedulePump();
    return promise;
  }

  /** Removes a pending proposal (answered, refused or timed out) and frees its forwarded bytes for the next waiting. */
  private takeProposal(key: string): ProposalWaiter<Outcome> | undefined {
    const waiter = this.proposals.get(key);
    if (waiter === undefined) return undefined;
    this.proposals.delete(key);
    if (waiter.queued) this.forwardGate.drop(key);
    else if (waiter.forwardedBytes > 0) {
      this.forwardGate.answered(waiter.forwardedBytes);
      this.sendWaiting();
    }
    return waiter;
  }

  /**
   * Sends the forward gate's waiting proposals that fit now, oldest first; refuses those that
   * waited too long (never sent: 429). A member that leads now proposes them itself.
   */
  private sendWaiting(): void {
    const gate = this.forwardGate;
    if (gate.waiting === 0) return;
    for (let late = gate.expired(this.timers.monotonicMs()); late !== null; late = gate.expired(this.timers.monotonicMs())) {
      const waiter = this.proposals.get(late.key);
      assert(waiter?.queued === true, 'a queued proposal has its waiter');
      waiter.queued = false;
      this.takeProposal(late.key);
      waiter.cancelTimer();
      waiter.reject(new OverloadedError('this member could not forward the write soon enough (too many bytes ahead of it); it was not sent: retry'));
    }
    if (this.role === 'leader') {
      for (const waiting of gate.drain()) this.sendQueued(waiting, true);
    } else {
      for (let next = gate.next(); next !== null; next = gate.next()) this.sendQueued(next, false);
    }
    this.schedulePump();
  }

  private sendQueued(waiting: { key: string; data: Uint8Array }, leading: boolean): void {
    const waiter = this.proposals.get(waiting.key);
    assert(waiter?.queued === true, 'a queued proposal has its waiter');
    waiter.queued = false;
    let refusal: Error | null = null;
    if (leading) {
      const result = this.core.propose(waiting.data);
      if (!result.ok) refusal = refusalError(result.reason);
    } else if (this.core.forwardProposal(waiting.data)) {
      waiter.forwardedBytes = waiting.data.byteLength;
      this.forwardGate.sent(waiter.forwardedBytes);
    } else {
      refusal = new UnavailableError('no leader', { leader: this.leader });
    }
    if (refusal === null) return;
    this.proposals.delete(waiting.key);
    waiter.cancelTimer();
    waiter.reject(refusal);
  }

  /** Resolves once this node has applied everything committed before the call (ReadIndex). */
  linearizableRead(): Promise<void> {
    if (this.stopped) return Promise.reject(new UnavailableError('the node is stopping'));
    const context = this.nextReadContext++;
    const promise = new Promise<void>((resolve, reject) => {
      const timer = this.timers.setTimeout(() => {
        this.reads.delete(context);
        reject(new UnavailableError('could not confirm leadership with a quorum in time'));
      }, this.options.requestTimeoutMs);
      this.reads.set(context, { resolve, reject, cancelTimer: () => timer.cancel(), index: -1 });
    });
    this.core.readIndex(context);
    this.schedulePump();
    return promise;
  }

  stop(): void {
    this.stopped = true;
    this.commitNoticeTimer?.cancel();
    this.commitNoticeTimer = null;
    const error = new UnavailableError('the node is stopping');
    for (const waiter of this.proposals.values()) {
      waiter.cancelTimer();
      waiter.reject(new TimeoutError('the node stopped: the outcome is unknown'));
    }
    this.proposals.clear();
    this.forwardGate.reset();
    for (const read of this.reads.values()) {
      read.cancelTimer();
      read.reject(error);
    }
    this.reads.clear();
  }

  /**
   * Proposals, reads and peer messages that arrive in one turn of the event loop share one Ready:
   * one WAL save, one append per follower, one acknowledgement back (under 64 clients the leader
   * had made a Ready per request, 3.6 entries each).
   */
  private schedulePump(): void {
    const soon = this.timers.soon;
    if (soon === undefined) return this.pump(true);
    if (this.pumpSoon) return;
    this.pumpSoon = true;
    // The simulator holds a paused member's callbacks until it resumes, as a stopped process would.
    soon(() => this.pump(true));
  }

  /**
   * Hands out every Ready the core has. Replication traffic (appends, heartbeats, commit notices)
   * is written as each Ready is taken (see pumpReadys). What finishing Readys frees (votes,
   * acknowledgements) is written at the end: at once when `flushNow` (the timers.soon callback,
   * or a caller asked), else (a disk-write completion or a tick) after the microtasks already
   * queued (PeerSender.flushSoon): the completions of one WAL group commit resolve together, so
   * the acknowledgements of all its writes share one socket write per peer instead of one each.
   * (Leaving them to the transport's flush at the turn's end put them behind the rest of a busy
   * poll phase: put p99 1.04-1.58x the old build's in three same-run A/Bs.)
   */
  private pump(flushNow: boolean): void {
    this.pumpSoon = false;
    this.pumpReadys();
    if (this.commitNoticeTimer === null && this.core.hasOwedCommitNotices()) {
      this.commitNoticeTimer = this.timers.setTimeout(() => {
        this.commitNoticeTimer = null;
        if (this.stopped) return;
        this.core.sendOwedCommitNotices();
        this.pump(true);
      }, this.options.commitNoticeDelayMs ?? 2);
    }
    // Acknowledgements and commit notices queued while handling the Readys leave now, not one
    // event-loop turn later (see PeerSender.flush); from a disk completion, once every completion
    // of the same group commit has run (they resolve together: see PeerSender.flushSoon).
    if (flushNow || this.timers.soon === undefined || this.peers.flushSoon === undefined) this.peers.flush?.();
    else this.peers.flushSoon();
  }

  private pumpReadys(): void {
    const inFlightMax = this.options.readysInFlightMax ?? 1;
    while (!this.stopped && this.inFlight.length < inFlightMax && this.core.hasReady()) {
      const ready = this.core.ready();
      const seq = ++this.readysTaken;
      this.observeSoftState(ready);
      this.trackUncommitted(ready);
      const termChange = this.mustSync(ready.hardState);
      const { early, late } = this.splitMessages(withRefusalsCut(ready.messages), termChange);
      // Thesis §10.2.1: the leader's appends go out while its own disk write is in progress.
      this.peers.send(early.length === 0 ? ready.appendMessages : ready.appendMessages.concat(early));
      // Out before the disk write is handed over and before applying, wherever in the turn this
      // runs: waking the WAL thread can cost this thread its core for a while, the followers'
      // fsyncs are the longer path, and a commit notice is what a follower's clients wait for
      // (left to the turn's end, behind this apply and the rest of a busy poll phase: 64 put
      // clients over all members ran at 0.65x the old build's rate in one same-run A/B).
      if (ready.appendMessages.length > 0 || early.length > 0) this.peers.flush?.();
      // A snapshot replaces the log it covers: nothing below it is applied any more (its install
      // brings the state), even entries committed and handed out earlier.
      if (ready.snapshot !== null) this.dropCovered(ready.snapshot.meta.index);
      this.toApply.push(...ready.committed);
      if (ready.snapshot === null && ready.entries.length === 0 && !termChange) {
        // Only the commit index moved: it need not be durable (a restart relearns it, and the
        // state machine keeps its applied index), so it waits for the next write instead of
        // costing an fsync of its own.
        if (ready.hardState !== null) this.deferredHardState = ready.hardState;
        if (this.inFlight.length === 0) {
          this.finish(seq, ready, late);
        } else {
          // Its messages may acknowledge entries still being written: it completes in turn.
          this.inFlight.push({ seq, ready, persisted: true, messages: late, termChange: false });
          this.applyDurable();
        }
        continue;
      }
      const hardState = ready.hardState ?? this.deferredHardState;
      this.deferredHardState = null;
      if (ready.hardState !== null) this.syncedHardState = ready.hardState;
      const handed: InFlightReady = { seq, ready, persisted: false, messages: late, termChange };
      if (termChange) this.termChangesInFlight++;
      this.inFlight.push(handed);
      // The disk write starts first (the WAL hands it to its thread in this turn), then the
      // committed entries already on this node's disk are applied while it runs: they need not
      // wait for this write, which saves the leader (and followers) an fsync cycle per write.
      this.logStore.persist(hardState === ready.hardState ? ready : { ...ready, hardState }).then(
        () => {
          handed.persisted = true;
          if (this.stopped) return;
          this.completeInOrder();
          // A disk completion in the poll phase: the messages it frees leave at the turn's end.
          this.pump(false);
        },
        (error: Error) => this.fail(error),
      );
      this.applyDurable();
    }
  }

  /** True when this leader's oldest uncommitted entry has waited past the bound. */
  private overloaded(): boolean {
    const oldest = this.uncommittedMarks[0];
    return oldest !== undefined && this.timers.monotonicMs() - oldest.atMs > this.uncommittedAgeMsMax;
  }

  private trackUncommitted(ready: Ready): void {
    const marks = this.uncommittedMarks;
    if (this.role !== 'leader') {
      if (marks.length > 0) this.uncommittedMarks = [];
      return;
    }
    const last = ready.entries[ready.entries.length - 1];
    if (last !== undefined) marks.push({ lastIndex: last.index, atMs: this.timers.monotonicMs() });
    const committed = ready.committed[ready.committed.length - 1]?.index ?? 0;
    const known = Math.max(committed, ready.hardState?.commit ?? 0);
    let done = 0;
    while (done < marks.length && (marks[done] as { lastIndex: number }).lastIndex <= known) done++;
    if (done > 0) marks.splice(0, done);
  }

  /** Finishes persisted Readys from the head, in hand-off order. */
  private completeInOrder(): void {
    while (!this.stopped && this.inFlight[0]?.persisted === true) {
      const { seq, ready, messages, termChange } = this.inFlight.shift() as InFlightReady;
      if (termChange) this.termChangesInFlight--;
      assert(this.termChangesInFlight >= 0, 'term changes in flight are counted once each');
      this.markDurable(ready);
      this.finish(seq, ready, messages);
    }
  }

  /**
   * The messages that may leave now and those that wait for the disk. Everything waits while a
   * new term or vote (this Ready's or an earlier one's) is not durable yet.
   */
  private splitMessages(
    messages: readonly RaftMessage[],
    termChange: boolean,
  ): { early: readonly RaftMessage[]; late: readonly RaftMessage[] } {
    if (termChange || this.termChangesInFlight > 0 || messages.length === 0) return { early: [], late: messages };
    let early: RaftMessage[] | null = null;
    let late: RaftMessage[] | null = null;
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i] as RaftMessage;
      if (promiseFreeTypes.has(message.type)) {
        early ??= [];
        early.push(message);
        if (late === null) late = messages.slice(0, i) as RaftMessage[];
      } else if (late !== null) {
        late.push(message);
      }
    }
    return early === null ? { early: [], late: messages } : { early, late: late ?? [] };
  }

  /** A new term or vote must be durable before anything stamped with it leaves; a commit need not. */
  private mustSync(hardState: HardState | null): boolean {
    if (hardState === null) return false;
    const synced = this.syncedHardState;
    return synced === null || hardState.term !== synced.term || hardState.vote !== synced.vote;
  }

  /**
   * The highest index whose entry on this node's disk is the one in the core's log: written by
   * a completed write and not being replaced by a Ready still in flight (a follower's suffix
   * overwrite, or a snapshot that replaces the log: what follows it waits for its install).
   */
  private applicableIndex(): number {
    let limit = this.durableIndex;
    for (const { ready } of this.inFlight) {
      if (ready.snapshot !== null) limit = Math.min(limit, ready.snapshot.meta.index);
      const first = ready.entries[0];
      if (first !== undefined) limit = Math.min(limit, first.index - 1);
    }
    return limit;
  }

  /** Applies the committed entries, in order, that are on this node's disk. */
  private applyDurable(): void {
    const limit = this.applicableIndex();
    let count = 0;
    while (count < this.toApply.length && (this.toApply[count] as Entry).index <= limit) count++;
    if (count === 0) return;
    const batch = this.toApply.slice(0, count);
    this.toApply = this.toApply.slice(count);
    this.apply(batch);
  }

  private dropCovered(snapshotIndex: number): void {
    this.toApply = this.toApply.filter((entry) => entry.index > snapshotIndex);
  }

  private markDurable(ready: Ready): void {
    let bytes = 0;
    for (const entry of ready.entries) bytes += entry.data.byteLength;
    this.logBytesSinceSnapshot += bytes;
    const lastEntry = ready.entries[ready.entries.length - 1];
    if (lastEntry !== undefined) this.checkpoints?.onPersisted(lastEntry.index, bytes);
    if (ready.snapshot !== null) this.durableIndex = ready.snapshot.meta.index;
    const last = ready.entries[ready.entries.length - 1];
    // Written entries may replace a suffix: the durable log now ends exactly at the last one.
    if (last !== undefined) this.durableIndex = last.index;
  }

  /** The rest of a Ready once its writes (and those of every earlier Ready) are durable. */
  private finish(seq: number, ready: Ready, messages: readonly RaftMessage[]): void {
    // Votes and acknowledgements promise durability: they leave only now, once this Ready's write
    // and every earlier one completed (the fsync done; no flush, however early, can send them
    // sooner: they reach the transport here). Readys finish strictly in the order taken, and
    // none handed out before this one is still in flight.
    assert(seq === this.readysFinished + 1, 'Readys finish in the order the core handed them out');
    assert(this.inFlight.every((waiting) => waiting.seq > seq), 'no earlier write is still in flight');
    this.readysFinished = seq;
    this.peers.send(messages);
    if (ready.snapshot !== null) {
      // Applied in order up to here; whatever the snapshot covers is replaced by it.
      const covered = ready.snapshot.meta.index;
      this.dropCovered(covered);
      this.stateMachine.restore(ready.snapshot);
      for (const listener of this.listeners ?? []) listener.onRestored?.(ready.snapshot);
      this.lastSnapshotIndex = Math.max(this.lastSnapshotIndex, covered);
    }
    this.applyDurable();
    for (const context of ready.droppedReads) this.failRead(context);
    for (const state of ready.readStates) {
      const read = this.reads.get(state.context);
      if (read === undefined) continue;
      read.index = state.index;
      this.confirmedReads.push(state.context);
    }
    this.serveReads();
    this.core.advance(ready);
    if (this.checkpoints !== null) this.maybeCheckpoint();
    else this.maybeSnapshot();
  }

  private apply(committed: readonly Entry[]): void {
    const proposalIds: (string | null)[] = [];
    const entries = committed.map((entry) => {
      if (entry.type !== EntryType.normal) {
        proposalIds.push(null);
        return entry;
      }
      const framed = unframeCommand(entry.data);
      proposalIds.push(framed?.proposalId ?? null);
      return framed === null ? entry : { ...entry, data: framed.command };
    });
    const outcomes = this.stateMachine.applyBatch(entries);
    this.applyBatches++;
    assert(outcomes.length === entries.length, 'one outcome per applied entry');
    proposalIds.forEach((id, i) => {
      if (id === null) return;
      const waiter = this.takeProposal(id);
      if (waiter === undefined) return;
      waiter.cancelTimer();
      waiter.resolve(outcomes[i] as Outcome);
    });
    const appliedIndex = this.stateMachine.appliedIndex();
    for (const listener of this.listeners ?? []) listener.onApplied?.(entries, outcomes, appliedIndex);
  }

  private serveReads(): void {
    if (this.confirmedReads.length === 0) return;
    const applied = this.stateMachine.appliedIndex();
    const waiting: number[] = [];
    for (const context of this.confirmedReads) {
      const read = this.reads.get(context);
      if (read === undefined) continue;
      if (read.index > applied) {
        waiting.push(context);
        continue;
      }
      this.reads.delete(context);
      read.cancelTimer();
      read.resolve();
    }
    this.confirmedReads = waiting;
  }

  /** The leader did not append these forwarded commands: their requests fail now (never committed). */
  private failRefused(message: RaftMessage & { type: 'proposeRefused' }): void {
    for (const head of message.commands) {
      const key = proposalIdOfHead(head);
      const waiter = key === null ? undefined : this.takeProposal(key);
      if (waiter === undefined) continue; // not ours, or answered already
      waiter.cancelTimer();
      waiter.reject(refusalError(message.reason));
    }
  }

  private failRead(context: number): void {
    const read = this.reads.get(context);
    if (read === undefined) return;
    this.reads.delete(context);
    read.cancelTimer();
    read.reject(new UnavailableError('leadership could not be confirmed (no leader, or it changed)'));
  }

  private observeSoftState(ready: Ready): void {
    if (ready.softState === null) return;
    this.leader = ready.softState.leader;
    this.role = ready.softState.role;
    for (const listener of this.listeners ?? []) listener.onLeaderChange?.(this.leader, this.role);
  }

  /**
   * The store checkpoints instead of snapshotting: when due, everything applied becomes durable,
   * and the log below it (less a tail kept for lagging followers) is released and compacted.
   */
  private maybeCheckpoint(): void {
    const policy = this.checkpoints;
    const checkpoint = this.logStore.checkpoint;
    if (policy === null || checkpoint === undefined || this.stopped) return;
    if (!policy.due(this.stateMachine.appliedIndex())) return;
    policy.started();
    checkpoint((durableIndex) => this.core.snapshotMetaAt(policy.releaseIndex(durableIndex))).then(
      ({ durableIndex, released }) => {
        policy.finished(durableIndex);
        if (released === null || this.stopped) return;
        // A leader's snapshot may have replaced the log meanwhile: then nothing is left to drop.
        const status = this.core.status();
        if (released.index > status.firstIndex - 1 && released.index <= status.appliedIndex) {
          this.core.compact(released.index, new Uint8Array(0));
        }
      },
      (error: Error) => {
        policy.finished(null);
        this.fail(error);
      },
    );
  }

  private maybeSnapshot(): void {
    const applied = this.stateMachine.appliedIndex();
    if (this.snapshotInFlight || applied <= this.lastSnapshotIndex) return;
    if (this.logBytesSinceSnapshot < this.lastSnapshotBytes * (this.options.snapshotLogRatio ?? 1)) return;
    // No size to wait for (none known yet): allowed from right after the last snapshot.
    this.snapshotAllowedFrom ??= this.lastSnapshotBytes === 0 ? this.lastSnapshotIndex + 1 : applied;
    // Due at the first multiple of the interval (shifted by this member's phase) since the last
    // snapshot and since enough log was written: members stay a phase apart when they wait.
    const every = this.options.snapshotEntries;
    const phase = (this.options.snapshotPhase ?? 0) % every;
    const since = Math.max(this.lastSnapshotIndex, this.snapshotAllowedFrom - 1);
    const due =
      Math.floor((applied + phase) / every) > Math.floor((since + phase) / every) ||
      this.logBytesSinceSnapshot >= (this.options.snapshotLogBytes ?? limits.snapshotLogBytes);
    if (!due) return;
    // While a Ready was on disk the core may have taken a leader's snapshot beyond what the state
    // machine has seen yet (it installs it with the next Ready): nothing to compact until then.
    if (this.core.status().firstIndex - 1 >= applied) return;
    this.lastSnapshotIndex = applied;
    this.logBytesSinceSnapshot = 0;
    this.snapshotAllowedFrom = null;
    this.snapshotInFlight = true;
    const background = this.logStore.snapshotInBackground;
    if (background !== undefined) {
      // Written off the event loop from the store's own view: its index may be past `applied`.
      background((index) => this.core.snapshotMetaAt(index)).then(
        (written) => {
          this.snapshotInFlight = false;
          if (written === null || this.stopped) return;
          const { meta } = written;
          this.lastSnapshotBytes = written.bytes;
          this.lastSnapshotIndex = Math.max(this.lastSnapshotIndex, meta.index);
          // A leader's snapshot may have replaced the log meanwhile: then nothing is left to drop.
          const status = this.core.status();
          if (meta.index > status.firstIndex - 1 && meta.index <= status.appliedIndex) {
            this.core.compact(meta.index, new Uint8Array(0));
          }
        },
        (error: Error) => this.fail(error),
      );
      return;
    }
    // Streamed to its file from one consistent view: the leader sends followers that file, so
    // the core keeps no copy of the state (an empty data) when the state machine can stream.
    const chunks = this.stateMachine.snapshotChunks?.();
    const data = chunks === undefined ? this.stateMachine.snapshotData() : new Uint8Array(0);
    const snapshot = this.core.compact(applied, data);
    this.lastSnapshotBytes = 0; // not reported by this path: no wait
    this.logStore.saveSnapshot(snapshot, chunks).then(
      () => {
        this.snapshotInFlight = false;
      },
      (error: Error) => this.fail(error),
    );
  }

  private fail(error: Error): void {
    if (this.stopped) return;
    this.stop();
    this.events.onFatal(error);
  }
}

/** A refusal names each command by its frame head: the rest of the command need not travel back. */
function withRefusalsCut(messages: readonly RaftMessage[]): readonly RaftMessage[] {
  if (!messages.some((message) => message.type === 'proposeRefused')) return messages;
  return messages.map((message) =>
    message.type === 'proposeRefused' ? { ...message, commands: message.commands.map(frameHead) } : message);
}

function refusalError(reason: string): Error {
  if (reason === 'tooLarge') return new OverloadedError('too many uncommitted proposals; retry later');
  if (reason === 'overloaded') return new OverloadedError('the leader is behind: its oldest uncommitted entry waits too long; retry later');
  return new UnavailableError(`the leader cannot take proposals now (${reason})`);
}
