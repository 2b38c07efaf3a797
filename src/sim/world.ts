// The simulated world: one event queue in simulated milliseconds, the members, their disks and
// the network between them. Every event is one step; the checkers run inside each step, and the
// run stops at the first violation so the reported step is the one that broke an invariant.
import type { SimWatchEnv } from './watch-member.js';
import { AssertionError, assert } from '../base/assert.js';
import type { SeededRandom } from '../base/random.js';
import { randomInt } from '../base/random.js';
import type {
  ConfState,
  Entry,
  MemberId,
  RaftApi,
  RaftConfig,
  RaftMessage,
} from '../raft/index.js';
import { defaultRaftConfig } from '../raft/index.js';
import { SafetyChecker } from './checker.js';
import { SimDisk } from './disk.js';
import { EventQueue } from './event-queue.js';
import { SimNetwork } from './network.js';
import type { SimLeaseEnv } from './lease-member.js';
import type { SimLockEnv } from './lock-member.js';
import type { NodeWorld } from './sim-node.js';
import { SimNode } from './sim-node.js';
import { Delivery } from './delivery.js';
import { traceLine } from './trace.js';
import type {
  CoreFactory,
  Scenario,
  SimEvent,
  SimOptions,
  SimStateMachine,
  SimStats,
  Violation,
  WorldEvent,
  WorldHooks,
  WorldRandoms,
} from './types.js';

export class World implements NodeWorld {
  nowMs = 0;
  step = 0;
  readonly checker: SafetyChecker;
  readonly network: SimNetwork;
  readonly nodes = new Map<MemberId, SimNode>();
  readonly violations: Violation[] = [];
  readonly tracing: boolean;
  readonly messagesBeforeDurable: boolean;
  readonly serverDriver: boolean;
  readonly backgroundSnapshots: boolean;
  readonly checkpointSnapshots: boolean;
  hooks: WorldHooks | null = null;
  /** Set before the members start when the run has a lease workload. */
  leases: SimLeaseEnv | null = null;
  /** Set before the members start when the run has a lock workload. */
  locks: SimLockEnv | null = null;
  /** Set before the members start when the run has watchers (with the lock workload). */
  watches: SimWatchEnv | null = null;
  onLeaderElected: ((node: SimNode) => void) | null = null;
  private readonly queue = new EventQueue<WorldEvent>();
  private readonly tickMsByMember = new Map<MemberId, number>();
  private readonly held = new Map<MemberId, WorldEvent[]>();
  private readonly delivery = new Delivery(this);
  private readonly crashOnWrite = new Map<MemberId, () => void>();
  private faultsOver = false;

  constructor(
    readonly scenario: Scenario,
    private readonly randoms: WorldRandoms,
    readonly options: SimOptions,
    private readonly createCore: CoreFactory,
    readonly stateMachine: SimStateMachine,
    readonly stats: SimStats,
  ) {
    this.checker = new SafetyChecker((invariant, detail) => this.report(invariant, detail));
    const faults = {
      lossRate: scenario.lossRate,
      duplicateRate: scenario.duplicateRate,
      reorderRate: scenario.reorderRate,
      ...(scenario.networkTailRate === undefined
        ? {}
        : { tailRate: scenario.networkTailRate, tailMsMax: scenario.networkTailMsMax ?? 1 }),
    };
    const { networkDelayMsMin, networkDelayMsMax } = scenario;
    this.network = new SimNetwork(randoms.network, networkDelayMsMin, networkDelayMsMax, faults);
    this.tracing = options.trace !== undefined;
    this.messagesBeforeDurable = options.driverBugs?.messagesBeforeDurable === true;
    this.serverDriver = options.driver === 'server';
    this.backgroundSnapshots = options.snapshots === 'background';
    this.checkpointSnapshots = options.snapshots === 'checkpoint';
    assert(!this.checkpointSnapshots || this.serverDriver, 'checkpoints are the production driver\'s');
    assert(!this.backgroundSnapshots || this.serverDriver, 'background snapshots are the production driver\'s');
  }

  report(invariant: string, detail: string): void {
    this.violations.push({ invariant, step: this.step, timeMs: this.nowMs, detail });
    this.trace('-', `VIOLATION ${invariant}: ${detail}`);
  }

  emit(event: SimEvent): void {
    this.options.onEvent?.(event);
  }

  schedule(atMs: number, event: WorldEvent): void {
    assert(atMs >= this.nowMs, 'events are never scheduled in the past');
    this.queue.push(atMs, event);
  }

  at(atMs: number, name: string, run: () => void): void {
    this.schedule(atMs, { type: 'action', name, run });
  }

  /** When the next event is due (null: none): a loop over several worlds runs the earliest. */
  nextEventMs(): number | null {
    return this.queue.peekTime();
  }

  /** Process one event; false when there is nothing left to do. */
  runStep(): boolean {
    const next = this.queue.pop();
    if (next === null) return false;
    this.nowMs = next.timeMs;
    this.step++;
    try {
      this.dispatch(next.item);
    } catch (error) {
      const what = error instanceof AssertionError ? 'assertion failed' : 'exception';
      this.report(
        what,
        error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error),
      );
    }
    return true;
  }

  // --- members -----------------------------------------------------------------------------

  addMember(id: MemberId, initialConfState: ConfState): SimNode {
    assert(!this.nodes.has(id), `member ${id} is new`);
    const s = this.scenario;
    const disk = new SimDisk(this.randoms.disk.fork(id), s.diskLatencyMsMin, s.diskLatencyMsMax);
    const node = new SimNode(
      id,
      disk,
      this.stateMachine.createApplier(),
      this,
      s.compactEveryEntries,
    );
    this.nodes.set(id, node);
    this.tickMsByMember.set(id, randomInt(this.randoms.ticks, s.tickMsMin, s.tickMsMax));
    this.initialConf.set(id, initialConfState);
    this.start(node);
    return node;
  }

  private readonly initialConf = new Map<MemberId, ConfState>();

  private start(node: SimNode): void {
    let recovered = node.disk.recover(this.initialConf.get(node.id) as ConfState);
    const kept = node.keptStatePast(recovered.snapshot?.meta.index ?? 0);
    if (kept !== null) recovered = { ...recovered, appliedIndex: kept.index };
    const config: RaftConfig = {
      ...defaultRaftConfig,
      id: node.id,
      inflightMessagesMax: this.scenario.inflightMessagesMax,
      appendBytesMax: this.scenario.appendBytesMax,
      applyBytesMax: this.scenario.applyBytesMax,
      uncommittedBytesMax: this.scenario.uncommittedBytesMax,
      electionTicks: this.scenario.electionTicks,
      heartbeatTicks: this.scenario.heartbeatTicks,
      preVote: this.scenario.preVote,
      checkQuorum: this.scenario.checkQuorum,
      deferCommitNotices: this.scenario.deferCommitNotices === true,
      ledgerCheck: this.options.ledgerCheck === true || this.options.olderCopy === true,
      ...(this.options.bugs === undefined ? {} : { bugs: this.options.bugs }),
    };
    const random = this.randoms.cores.fork(node.id * 1000 + node.incarnation);
    const core = this.createCore(config, recovered, random);
    node.boot(recovered, core, this.stateMachine.createApplier(), kept);
    const tickMs = this.tickMsByMember.get(node.id) as number;
    this.schedule(this.nowMs + randomInt(this.randoms.ticks, 1, tickMs), {
      type: 'tick',
      member: node.id,
      incarnation: node.incarnation,
    });
    const log = node.log;
    const where = `log ${log.firstIndex}..${log.lastIndex} applied ${node.appliedIndex}`;
    this.trace(node, `boot incarnation ${node.incarnation} ${where}`);
  }

  crash(node: SimNode): void {
    if (node.state === 'crashed' || node.state === 'removed') return;
    node.crash();
    this.held.delete(node.id);
    this.crashOnWrite.delete(node.id);
    const { tornEntries, lostWrites } = node.disk.crash(this.nowMs, this.scenario.tornWriteRate);
    this.stats.crashes++;
    this.trace(node, `CRASH lost ${lostWrites} writes, torn entries kept ${tornEntries}`);
    this.emit({ type: 'crash', timeMs: this.nowMs, member: node.id });
  }

  restart(node: SimNode): void {
    if (node.state !== 'crashed') return;
    this.start(node);
    this.emit({ type: 'restart', timeMs: this.nowMs, member: node.id });
  }

  pause(node: SimNode): void {
    if (node.state !== 'running') return;
    node.state = 'paused';
    this.stats.pauses++;
    this.trace(node, 'PAUSE');
  }

  resume(node: SimNode): void {
    if (node.state !== 'paused') return;
    node.state = 'running';
    this.trace(node, 'RESUME');
    const held = this.held.get(node.id) ?? [];
    this.held.delete(node.id);
    // What piled up while stopped is handled now, in arrival order, with the member's stale view.
    for (const event of held) this.dispatch(event);
    node.pump();
  }

  decommission(node: SimNode): void {
    if (node.state === 'removed') return;
    if (node.state !== 'crashed') node.crash();
    node.state = 'removed';
    this.held.delete(node.id);
    this.trace(node, 'DECOMMISSIONED');
  }

  /** The running member that believes it leads the highest term, if any. */
  leader(): SimNode | null {
    let best: SimNode | null = null;
    for (const node of this.nodes.values()) {
      if (node.state !== 'running' || node.role !== 'leader') continue;
      if (best === null || node.hard.term > best.hard.term) best = node;
    }
    return best;
  }

  runningNodes(): SimNode[] {
    return [...this.nodes.values()].filter((node) => node.state === 'running');
  }

  // --- NodeWorld ---------------------------------------------------------------------------

  send(node: SimNode, messages: readonly RaftMessage[]): void {
    this.delivery.send(node, messages);
  }

  scheduleDiskDone(node: SimNode, writeId: number, atMs: number): void {
    const member = node.id;
    this.schedule(atMs, { type: 'diskDone', member, incarnation: node.incarnation, writeId });
    const afterCrash = this.crashOnWrite.get(node.id);
    if (afterCrash !== undefined && atMs > this.nowMs) {
      // Strictly before the write completes: the crash catches it in progress (lost or torn).
      this.crashOnWrite.delete(node.id);
      const incarnation = node.incarnation;
      const crashAtMs = this.nowMs + ((atMs - this.nowMs - 1) >> 1);
      this.at(crashAtMs, `CRASH n${node.id} during a write`, () => {
        if (this.faultsOver || node.incarnation !== incarnation || !isUp(node)) return;
        this.crash(node);
        afterCrash();
      });
    }
  }

  /** Crash `node` in the middle of its next disk write that takes time, then call `afterCrash`. */
  crashDuringNextWrite(node: SimNode, afterCrash: () => void): void {
    this.crashOnWrite.set(node.id, afterCrash);
  }

  /** The faults are over: crashes still waiting for a write never happen. */
  cancelPendingCrashes(): void {
    this.faultsOver = true;
    this.crashOnWrite.clear();
  }

  onBecameLeader(node: SimNode, term: number): void {
    this.stats.elections++;
    this.trace(node, `became leader of term ${term}`);
    this.emit({ type: 'leader', timeMs: this.nowMs, member: node.id, term });
    this.onLeaderElected?.(node);
  }

  onApplied(node: SimNode, entry: Entry, chain: number): void {
    if (node.role === 'leader') this.stats.committedOnLeader++;
    this.hooks?.onApplied(node, entry, chain);
  }

  onReadServed(node: SimNode, context: number): void {
    this.hooks?.onReadServed(node, context);
  }

  onReadDropped(node: SimNode, context: number): void {
    this.hooks?.onReadDropped(node, context);
  }

  traceNode(node: SimNode, text: string): void {
    this.trace(node, text);
  }

  trace(node: SimNode | string, text: string): void {
    const sink = this.options.trace;
    if (sink === undefined) return;
    if (typeof node === 'string') {
      sink(traceLine(this.nowMs, node, null, 0, 0, text));
      return;
    }
    const role = node.state === 'running' || node.state === 'paused' ? node.role : null;
    sink(traceLine(this.nowMs, `n${node.id}`, role, node.hard.term, node.hard.commit, text));
  }

  // --- dispatch ----------------------------------------------------------------------------

  private dispatch(event: WorldEvent): void {
    switch (event.type) {
      case 'action':
        if (event.name !== '') this.trace('-', event.name);
        event.run();
        return;
      case 'tick':
        this.onTick(event.member, event.incarnation);
        return;
      case 'deliver':
        this.delivery.deliver(event);
        return;
      case 'diskDone':
        this.onDiskDone(event);
        return;
      case 'snapshotReport':
      case 'unreachable':
        this.delivery.report(event);
        return;
    }
  }

  private onTick(member: MemberId, incarnation: number): void {
    const node = this.nodes.get(member) as SimNode;
    if (node.incarnation !== incarnation || !isUp(node)) return;
    const nextMs = this.nowMs + (this.tickMsByMember.get(member) as number);
    this.schedule(nextMs, { type: 'tick', member, incarnation });
    if (node.state === 'paused') return; // a stopped process does not notice time passing
    const core = node.core as RaftApi;
    // Deferred commit notices go out by the next tick at the latest (the server driver sends
    // them sooner, on a timer of its own).
    if (core.hasOwedCommitNotices()) core.sendOwedCommitNotices();
    core.tick();
    node.pump();
    node.onTick();
  }

  private onDiskDone(event: WorldEvent & { type: 'diskDone' }): void {
    const node = this.nodes.get(event.member) as SimNode;
    if (node.incarnation !== event.incarnation || !isUp(node)) return;
    // The disk finishes even while the process is stopped; the driver notices on resume.
    node.disk.completeThrough(event.writeId);
    if (node.state === 'paused') {
      this.hold(node, event);
      return;
    }
    node.onDiskDone(event.writeId);
  }

  /** Keep an event for a paused member until it resumes. */
  hold(node: SimNode, event: WorldEvent): void {
    let list = this.held.get(node.id);
    if (list === undefined) {
      list = [];
      this.held.set(node.id, list);
    }
    list.push(event);
  }
}

/** Running or paused: the process exists (a paused one just makes no progress). */
function isUp(node: SimNode): boolean {
  return node.state === 'running' || node.state === 'paused';
}
