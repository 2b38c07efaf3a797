// Runs a member through the production driver (src/driver/driver.ts) instead of the sim's own:
// the sim supplies the driver's doors (log store on the simulated disk, state machine, peers,
// timers on simulated time) and watches the core through a thin wrapper, so every checker still
// sees each Ready. The driver waits on the log store with `.then`: the store hands it a thenable
// that the simulated disk settles synchronously inside the step that completes the write, so a
// failure in the driver's continuation is caught and reported like any other. The client's
// promises (proposals, reads) settle as microtasks, which simulateAsync drains after every step.
import { createSimWatches, type SimWatches } from './watch-member.js';
import { assert } from '../base/assert.js';
import type { ConfChange, Entry, RaftApi, RaftMessage, Ready, Snapshot, SnapshotMeta } from '../raft/index.js';
import type { ApplyOutcome, MvccStore } from '../mvcc/index.js';
import { NodeDriver } from '../driver/driver.js';
import type { LeaseService } from '../lease/lease-service.js';
import type { LogStore, PeerSender, StateMachine, Timers, WrittenSnapshot } from '../driver/types.js';
import type { DiskWrite } from './disk.js';
import { diskWriteOfReady } from './disk.js';
import { createSimLeaseService } from './lease-member.js';
import { createSimLocks, type SimLocks } from './lock-member.js';
import { MvccApplier } from './mvcc-machine.js';
import type { MemberDriver, NodeWorld, SimNode } from './sim-node.js';
import type { Applier } from './types.js';

/** What the driver's state machine answers per applied entry: where it landed. */
export interface AppliedOutcome {
  readonly index: number;
  readonly term: number;
  /** The log-prefix hash at `index` (0 when the entry was refused by the checkers). */
  readonly chain: number;
  /** The MVCC store's answer, when the state machine is the MVCC one. */
  readonly mvcc?: ApplyOutcome;
}

/** How long a proposal or read waits on the driver before it answers `timeout`/`unavailable`. */
export const requestTimeoutMs = 2_000;
const proposalIdBytes = 16;

export class ServerDriverBinding implements MemberDriver {
  readonly driver: NodeDriver<AppliedOutcome>;
  /** The production lease service of this incarnation (lease workload runs only). */
  readonly leases: LeaseService | null = null;
  /** The production lock service of this incarnation (lock workload runs only). */
  readonly locks: SimLocks | null = null;
  readonly watches: SimWatches | null = null;
  private readonly pendingWrites = new Map<number, SimThenable<void>>();
  private readonly mvccApplier: MvccApplier | null;
  /**
   * The last snapshot written in the background, as its file: the driver compacts the core with
   * no data (a node's leader sends followers the file), so the core's copy is filled from here.
   */
  private snapshotFile: Snapshot | null = null;

  constructor(
    private readonly node: SimNode,
    private readonly world: NodeWorld,
    core: RaftApi,
    applier: Applier,
    snapshotEntries: number,
  ) {
    const incarnation = node.incarnation;
    this.mvccApplier = applier instanceof MvccApplier ? applier : null;
    const timers = memberTimers(node, world);
    const logStore: LogStore = {
      persist: (ready) => this.write(diskWriteOfReady(ready)),
      saveSnapshot: (snapshot) => this.write({ kind: 'compact', snapshot }),
      ...(world.backgroundSnapshots
        ? { snapshotInBackground: (metaAt) => this.snapshotInBackground(applier, timers, metaAt) }
        : {}),
      ...(world.checkpointSnapshots
        ? { checkpoint: (releaseMeta) => this.checkpoint(applier, releaseMeta) }
        : {}),
    };
    const stateMachine: StateMachine<AppliedOutcome> = {
      appliedIndex: () => applier.appliedIndex(),
      applyBatch: (entries) => entries.map((entry) => this.apply(entry)),
      snapshotData: () => applier.snapshot(),
      restore: (snapshot: Snapshot) => node.installSnapshot(snapshot),
    };
    const peers: PeerSender = {
      send: (messages: readonly RaftMessage[]) =>
        node.sendMessages(world.checkpointSnapshots ? this.withSnapshotsMade(messages, applier, core, timers) : messages),
    };
    // Each incarnation reads with its own contexts (a late answer to a crashed one's read must
    // not serve this one's), deterministically.
    const readContextStart = incarnation * 2 ** 32 + 1;
    // Checkpointing members keep a short log below the checkpoint, so that lagging followers
    // still need snapshots; the interval varies per member without drawing randomness.
    const checkpoint = { everyTicks: 1 + (node.id % 3), everyEntries: snapshotEntries, keepEntries: Math.max(1, Math.floor(snapshotEntries / 4)), keepBytes: 1 << 20 };
    const options = {
      requestTimeoutMs, snapshotEntries, readysInFlightMax: 8, commitNoticeDelayMs: 2, readContextStart,
      ...(world.checkpointSnapshots ? { checkpoint } : {}),
    };
    const events = { onFatal: (error: Error) => world.report('driver failed', error.message) };
    this.driver = new NodeDriver(
      observed(core, node, (index) => (this.snapshotFile?.meta.index === index ? this.snapshotFile.data : null)),
      logStore,
      stateMachine,
      peers,
      timers,
      options,
      events,
    );
    const leaseEnv = world.leases;
    if (leaseEnv !== null) {
      assert(this.mvccApplier !== null, 'the lease workload runs on the MVCC state machine');
      this.leases = createSimLeaseService(node, world, this.driver, this.mvccApplier, timers, leaseEnv);
    }
    if (world.locks !== null) {
      assert(this.mvccApplier !== null, 'the lock workload runs on the MVCC state machine');
      this.locks = createSimLocks(this.driver, this.mvccApplier, timers, () => world.nowMs, world.locks);
    }
    if (world.watches !== null) {
      assert(this.mvccApplier !== null, 'watchers run on the MVCC state machine');
      this.watches = createSimWatches(this.mvccApplier, world.watches, timers);
    }
    // The lease, lock and watch services hear applied batches the way the node's do (src/node/node.ts).
    this.driver.start([{
      onApplied: (entries, outcomes) => {
        this.leases?.onApplied(entries, outcomes.flatMap((outcome) => (outcome.mvcc === undefined ? [] : [outcome.mvcc])));
        this.locks?.feed.onApplied();
        this.watches?.onApplied();
      },
      onRestored: () => {
        this.leases?.onRestored();
        this.watches?.onApplied();
      },
      onLeaderChange: (leader) => {
        this.leases?.onLeaderChange();
        this.watches?.onLeaderChange(leader);
      },
    }]);
  }

  /** The member's MVCC store (null with the register machine). */
  get mvccStore(): MvccStore | null {
    return this.mvccApplier?.store ?? null;
  }

  /** A node tick: the lease service's expiry and checkpoint pass (the driver ticks the core). */
  tick(): void {
    this.leases?.tick();
  }

  /** The simulated disk finished write `writeId`: the driver's persist promise resolves. */
  onDiskDone(writeId: number): void {
    const write = this.pendingWrites.get(writeId);
    if (write === undefined) return;
    this.pendingWrites.delete(writeId);
    write.settle(undefined);
  }

  pump(): void {
    this.driver.flush();
  }

  propose(commandId: number, command: Uint8Array): Promise<AppliedOutcome> {
    return this.driver.propose(proposalId(commandId), command);
  }

  stop(): void {
    this.leases?.stop();
    this.driver.stop();
  }

  private write(write: DiskWrite): Promise<void> {
    const { id, doneAtMs } = this.node.disk.submit(this.world.nowMs, write);
    this.world.scheduleDiskDone(this.node, id, doneAtMs);
    const thenable = new SimThenable<void>();
    this.pendingWrites.set(id, thenable);
    // The driver only ever calls `.then(onDone, onFailed)` on what the store returns.
    return thenable as unknown as Promise<void>;
  }

  /**
   * A node's snapshot thread on simulated time: its read view opens a few ms after the request
   * (entries applied meanwhile are in it), the file is one disk write, and the log below it is
   * released with that write (the simulated disk's compaction).
   */
  private snapshotInBackground(
    applier: Applier,
    timers: Timers,
    metaAt: (index: number) => SnapshotMeta | null,
  ): Promise<WrittenSnapshot | null> {
    const result = new SimThenable<WrittenSnapshot | null>();
    // Varied without drawing from the world's randomness (that would change every seed's run).
    const viewDelayMs = 1 + (applier.appliedIndex() % 5) * 3;
    timers.setTimeout(() => {
      const meta = metaAt(applier.appliedIndex());
      if (this.world.tracing) this.world.traceNode(this.node, `snapshot view at ${applier.appliedIndex()}${meta === null ? ' (not needed)' : ''}`);
      if (meta === null) {
        result.settle(null);
        return;
      }
      const snapshot = { meta, data: applier.snapshot() };
      void this.write({ kind: 'compact', snapshot }).then(() => {
        this.snapshotFile = snapshot;
        result.settle({ meta, bytes: snapshot.data.length });
      });
    }, viewDelayMs);
    return result as unknown as Promise<WrittenSnapshot | null>;
  }

  /**
   * A checkpoint: the state is taken now (the node's pinned tree), becomes durable with a disk
   * write (its fdatasync), and only then is the log released below it less the tail (a second
   * write: the WAL's start marker), as src/driver/log-store.ts does.
   */
  private checkpoint(
    applier: Applier,
    releaseMeta: (durableIndex: number) => SnapshotMeta | null,
  ): Promise<{ durableIndex: number; released: SnapshotMeta | null }> {
    const result = new SimThenable<{ durableIndex: number; released: SnapshotMeta | null }>();
    const state = { data: applier.snapshot(), index: applier.appliedIndex() };
    void this.write({ kind: 'sync' }).then(() => {
      this.node.checkpointed(state);
      const released = releaseMeta(state.index);
      if (this.world.tracing) this.world.traceNode(this.node, `checkpoint at ${state.index}, log released to ${released?.index ?? 'none'}`);
      if (released === null) {
        result.settle({ durableIndex: state.index, released });
        return;
      }
      // The log's start names no data: the checkpoint at or past it holds the state.
      void this.write({ kind: 'compact', snapshot: { meta: released, data: new Uint8Array(0) } }).then(() => {
        result.settle({ durableIndex: state.index, released });
      });
    });
    return result as unknown as Promise<{ durableIndex: number; released: SnapshotMeta | null }>;
  }

  /**
   * A checkpointing leader's core names a log start with no data: each snapshot message gets a
   * snapshot made now from the state machine (a node's on-demand file), at its applied index.
   */
  private withSnapshotsMade(messages: readonly RaftMessage[], applier: Applier, core: RaftApi, timers: Timers): readonly RaftMessage[] {
    if (!messages.some((message) => message.type === 'snapshot')) return messages;
    const out: RaftMessage[] = [];
    for (const message of messages) {
      if (message.type !== 'snapshot') {
        out.push(message);
        continue;
      }
      const applied = applier.appliedIndex();
      const wanted = message.snapshot.meta;
      const meta = applied === wanted.index ? wanted : core.snapshotMetaAt(applied);
      if (meta === null || meta.index < wanted.index) {
        // Not makeable now: the transfer fails, and the core tries again.
        timers.setTimeout(() => this.driver.reportSnapshot(message.to, false), 1);
        continue;
      }
      out.push({ ...message, snapshot: { meta, data: applier.snapshot() } });
    }
    return out;
  }

  private apply(entry: Entry): AppliedOutcome {
    const chain = this.node.applyEntry(entry);
    const mvcc = chain === null ? null : (this.mvccApplier?.lastOutcome ?? null);
    if (mvcc === null) return { index: entry.index, term: entry.term, chain: chain ?? 0 };
    if (this.leases !== null) this.world.leases?.onOutcome(this.node, entry, mvcc);
    return { index: entry.index, term: entry.term, chain: chain ?? 0, mvcc };
  }
}

/**
 * The driver's (and the lease and lock services') timers on simulated time, for the member's
 * current incarnation. One that comes due while the member is paused (SIGSTOP) runs when it
 * resumes, after what arrived before it, as in a stopped process; one of an earlier incarnation
 * never runs.
 */
export function memberTimers(node: SimNode, world: Pick<NodeWorld, 'nowMs' | 'at' | 'hold'>): Timers {
  const incarnation = node.incarnation;
  const runOrHold = (run: () => void): void => {
    if (node.incarnation !== incarnation) return;
    if (node.state === 'running') run();
    else if (node.state === 'paused') world.hold(node, { type: 'action', name: '', run: () => runOrHold(run) });
  };
  return {
    monotonicMs: () => world.nowMs,
    setTimeout: (callback, ms) => {
      let cancelled = false;
      world.at(world.nowMs + Math.max(0, Math.ceil(ms)), '', () =>
        runOrHold(() => {
          if (!cancelled) callback();
        }),
      );
      return { cancel: () => (cancelled = true) };
    },
    soon: (callback) => world.at(world.nowMs, '', () => runOrHold(callback)),
  };
}

/** A write's completion, delivered synchronously when the simulated disk finishes it. */
class SimThenable<T> {
  private onDone: ((value: T) => void) | null = null;

  then(onDone: (value: T) => void): void {
    assert(this.onDone === null, 'one continuation per write');
    this.onDone = onDone;
  }

  settle(value: T): void {
    this.onDone?.(value);
  }
}

/** The core as the driver sees it, with every Ready and compaction mirrored for the checkers. */
function observed(core: RaftApi, node: SimNode, fileData: (index: number) => Uint8Array | null): RaftApi {
  return {
    tick: () => core.tick(),
    step: (message: RaftMessage) => core.step(message),
    propose: (data: Uint8Array) => core.propose(data),
    forwardProposal: (data: Uint8Array) => core.forwardProposal(data),
    proposeConfChange: (change: ConfChange) => core.proposeConfChange(change),
    readIndex: (context: number) => core.readIndex(context),
    transferLeadership: (to) => core.transferLeadership(to),
    campaign: () => core.campaign(),
    advanceElectionClock: () => core.advanceElectionClock(),
    reportUnreachable: (to) => core.reportUnreachable(to),
    reportSnapshot: (to, ok) => core.reportSnapshot(to, ok),
    hasReady: () => core.hasReady(),
    hasOwedCommitNotices: () => core.hasOwedCommitNotices(),
    sendOwedCommitNotices: () => core.sendOwedCommitNotices(),
    ready: () => {
      const ready = core.ready();
      node.observe(ready);
      return ready;
    },
    advance: (ready: Ready) => core.advance(ready),
    compact: (index: number, data: Uint8Array) => {
      const snapshot = core.compact(index, data.length === 0 ? (fileData(index) ?? data) : data);
      node.log.compact(index);
      return snapshot;
    },
    snapshotMetaAt: (index: number) => core.snapshotMetaAt(index),
    regressed: () => core.regressed(),
    reportNoLedger: (peer) => core.reportNoLedger(peer),
    ledger: () => core.ledger(),
    status: () => core.status(),
  };
}

/** A 16-byte proposal id from the sim's command id (unique across the whole run). */
export function proposalId(commandId: number): Uint8Array {
  const bytes = new Uint8Array(proposalIdBytes);
  let rest = commandId;
  for (let i = proposalIdBytes - 1; i >= 0 && rest > 0; i--) {
    bytes[i] = rest % 256;
    rest = Math.floor(rest / 256);
  }
  return bytes;
}
