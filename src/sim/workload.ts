// The client side: proposals with unique command ids against the member the client believes
// leads, and ReadIndex reads against any member. It records what users would rely on: an
// acknowledgement (the proposing leader applied the entry at the index and term it was given)
// and, for each read, the newest write acknowledged before the read began.
import type { Random } from '../base/random.js';
import { chance, pick, randomInt } from '../base/random.js';
import type { Entry, MemberId, RaftApi } from '../raft/index.js';
import { EntryType } from '../raft/index.js';
import { CommitSource } from './checker.js';
import type { SimNode } from './sim-node.js';
import type { WorldHooks } from './types.js';
import type { World } from './world.js';

/** A production-driver write unanswered this long (the driver times out at 2 s) is given up on. */
const writeAbandonMs = 2_500;

interface ReadRecord {
  readonly key: string;
  readonly member: MemberId;
  readonly startMs: number;
  /** The highest version of `key` acknowledged to any client before the read began. */
  readonly floorVersion: number;
}

export class Workload implements WorldHooks {
  private nextCommandId = 1;
  private nextReadContext = 1;
  private leaderGuess: MemberId = 0;
  private readonly reads = new Map<number, ReadRecord>();
  private readonly ackedVersionByKey = new Map<string, number>();
  /** Set by the liveness phase: the first acknowledged write proposed after this command id. */
  private probeFromCommandId = Number.POSITIVE_INFINITY;
  probeAck: { readonly index: number; readonly timeMs: number } | null = null;
  /** When each write through the production driver was sent, until it is answered. */
  private readonly sentMsByCommand = new Map<number, number>();

  constructor(
    private readonly world: World,
    private readonly random: Random,
    /** Test-only: answer reads from local state with no ReadIndex round (stale reads). */
    private readonly localReads = false,
    /** Production-driver writes: no new write through a member whose oldest has waited longer. */
    private readonly queueDelayMsMax = Number.POSITIVE_INFINITY,
  ) {}

  /** Propose a batch of writes to the member believed to lead; follow its leader hint. */
  propose(): void {
    const scenario = this.world.scenario;
    if (chance(this.random, scenario.forwardRate)) {
      this.forward();
      return;
    }
    const node = this.target();
    if (node === null) return;
    if (node.proposals.size >= scenario.clientOutstandingMax) {
      // Swarm runs only for now: the older profiles fill their window of 256 now and then too
      // (default seeds 31, 52, 131), and giving up there would change how those seeds replay.
      if (scenario.profile === 'swarm') this.giveUpStale(node);
      return;
    }
    const core = node.core as RaftApi;
    const count = randomInt(this.random, scenario.proposeBatchMin, scenario.proposeBatchMax);
    if (node.serverDriver !== null) {
      for (let i = 0; i < count; i++) this.proposeThroughDriver(node);
      return;
    }
    for (let i = 0; i < count; i++) {
      const commandId = this.nextCommandId++;
      const key = this.key();
      const result = core.propose(this.world.stateMachine.encodeWrite({ commandId, key }));
      this.world.stats.proposals++;
      if (!result.ok) {
        this.leaderGuess = result.leader;
        break;
      }
      node.proposals.set(result.index, { term: result.term, commandId, key });
      if (this.world.tracing)
        this.world.traceNode(
          node,
          `propose #${commandId} ${key} at ${result.index}/${result.term}`,
        );
    }
    node.pump();
  }

  /**
   * The client's window on `node` is full. Writes proposed in an older term than the member's
   * own may never be answered: a new leader truncated them, and the indices they wait for are
   * filled only by new writes, which the full window keeps this client from sending (swarm seed
   * 1153: 34 writes lost with leader 4's term 6 and 32 allowed, so the client waited on member 4
   * forever and the cell committed nothing more). A real client times out on them and follows
   * the leader hint; so does this one. Draws nothing, and only runs with a full window.
   */
  private giveUpStale(node: SimNode): void {
    for (const [index, proposal] of node.proposals)
      if (proposal.term < node.hard.term) node.proposals.delete(index);
    if (node.role !== 'leader' && node.leader !== 0) this.leaderGuess = node.leader;
  }

  /** A write through any member, which forwards it to its leader (acknowledged by command id). */
  private forward(): void {
    const nodes = this.world.runningNodes();
    if (nodes.length === 0) return;
    const node = pick(this.random, nodes);
    if (node.serverDriver !== null) {
      this.proposeThroughDriver(node); // the production driver forwards from followers itself
      return;
    }
    // Forwarded writes can vanish silently (the leader changed): past the bound, the client has
    // long timed out on the old ones and stops waiting for them.
    if (node.forwarded.size >= this.world.scenario.clientOutstandingMax) node.forwarded.clear();
    const commandId = this.nextCommandId++;
    const key = this.key();
    this.world.stats.proposals++;
    if (
      (node.core as RaftApi).forwardProposal(
        this.world.stateMachine.encodeWrite({ commandId, key }),
      )
    ) {
      node.forwarded.add(commandId);
      if (this.world.tracing) this.world.traceNode(node, `forward #${commandId} ${key}`);
    }
    node.pump();
  }

  read(): void {
    const nodes = this.world.runningNodes();
    if (nodes.length === 0) return;
    const node = chance(this.random, 0.5)
      ? (this.target() ?? pick(this.random, nodes))
      : pick(this.random, nodes);
    const key = this.key();
    const context = this.nextReadContext++;
    this.reads.set(context, {
      key,
      member: node.id,
      startMs: this.world.nowMs,
      floorVersion: this.ackedVersionByKey.get(key) ?? 0,
    });
    this.world.stats.reads++;
    if (this.world.tracing) this.world.traceNode(node, `read #${context} ${key}`);
    if (this.localReads) {
      this.onReadServed(node, context);
      return;
    }
    const binding = node.serverDriver;
    if (binding !== null) {
      binding.driver.linearizableRead().then(
        () => this.onReadServed(node, context),
        () => this.onReadDropped(node, context),
      );
      return;
    }
    (node.core as RaftApi).readIndex(context);
    node.pump();
  }

  /** A write through the production driver: acknowledged when its promise resolves. */
  private proposeThroughDriver(node: SimNode): void {
    const binding = node.serverDriver;
    const outstandingMax = this.world.scenario.clientOutstandingMax;
    if (binding === null || node.forwarded.size >= outstandingMax) return;
    // Backpressure, as a server answers `overloaded`: a client that times out and proposes again
    // would otherwise grow the leader's backlog past what it can commit within any time bound.
    if (node.log.lastIndex - node.appliedIndex >= outstandingMax) return;
    if (this.queueDelayed(node)) return;
    const commandId = this.nextCommandId++;
    const key = this.key();
    this.world.stats.proposals++;
    node.forwarded.add(commandId);
    this.sentMsByCommand.set(commandId, this.world.nowMs);
    if (this.world.tracing)
      this.world.traceNode(node, `propose #${commandId} ${key} (server driver)`);
    binding.propose(commandId, this.world.stateMachine.encodeWrite({ commandId, key })).then(
      (outcome) => {
        node.forwarded.delete(commandId);
        this.sentMsByCommand.delete(commandId);
        if (outcome.chain === 0) return;
        // A duplicate copy (a resent or duplicated forward) is answered from the first copy: the
        // value a read can see is that copy's, so the read floor is where the first one applied.
        const duplicate = outcome.mvcc?.type === 'applied' && outcome.mvcc.duplicate;
        const effective = duplicate ? this.world.stateMachine.effectiveIndexOf?.(commandId) : undefined;
        this.acknowledge(node, outcome.index, outcome.term, outcome.chain, key, commandId, effective);
      },
      () => {
        node.forwarded.delete(commandId);
        this.sentMsByCommand.delete(commandId);
        this.leaderGuess = node.leader;
      },
    );
  }

  /**
   * True while the oldest write outstanding through `node` has waited longer than the client's
   * queue-delay bound: the cell commits more slowly than this client offers writes, so it waits
   * for answers instead of adding more. A window counted in writes alone (clientOutstandingMax)
   * lets the queue grow to whatever it holds: at the slowest scenarios' rates (64-byte appends,
   * one in flight, 80-110 commits/s) 256 queued writes wait 2-3 s, past every client's timeout,
   * so no write, lock call or lease call is answered in time while the cell commits at full speed.
   */
  private queueDelayed(node: SimNode): boolean {
    for (const commandId of node.forwarded) {
      const waitedMs = this.world.nowMs - (this.sentMsByCommand.get(commandId) ?? this.world.nowMs);
      if (waitedMs <= writeAbandonMs) return waitedMs > this.queueDelayMsMax;
      // No answer long past the driver's timeout (it was paused when that fired): given up.
      node.forwarded.delete(commandId);
      this.sentMsByCommand.delete(commandId);
    }
    return false;
  }

  onApplied(node: SimNode, entry: Entry, chain: number): void {
    if (node.serverDriver !== null) return; // acknowledged through the driver's promises
    if (node.forwarded.size > 0) this.onAppliedForwarded(node, entry, chain);
    const proposal = node.proposals.get(entry.index);
    if (proposal === undefined) return;
    node.proposals.delete(entry.index);
    if (proposal.term !== entry.term) return; // lost to a new leader: the client hears a failure
    const command = this.world.stateMachine.decodeWrite(entry.data);
    if (command === null || command.commandId !== proposal.commandId) {
      this.world.report(
        'acknowledged entry kept',
        `member ${node.id} acknowledges #${proposal.commandId} at ${entry.index}/${entry.term} but applied other data`,
      );
      return;
    }
    this.acknowledge(node, entry.index, entry.term, chain, command.key, command.commandId);
  }

  /** The member that forwarded a command recognizes it by its id when it applies it. */
  private onAppliedForwarded(node: SimNode, entry: Entry, chain: number): void {
    if (entry.type !== EntryType.normal || entry.data.length === 0) return;
    const command = this.world.stateMachine.decodeWrite(entry.data);
    if (command === null || !node.forwarded.has(command.commandId)) return;
    node.forwarded.delete(command.commandId);
    this.acknowledge(node, entry.index, entry.term, chain, command.key, command.commandId);
  }

  private acknowledge(
    node: SimNode,
    index: number,
    term: number,
    chain: number,
    key: string,
    commandId: number,
    /** Where the write took effect, when not at `index` (a duplicate's first copy). */
    effectiveIndex = index,
  ): void {
    this.world.stats.acknowledged++;
    this.world.checker.onCommitted(
      index,
      term,
      chain,
      node.hard.term,
      CommitSource.acknowledged,
      node.id,
    );
    const previous = this.ackedVersionByKey.get(key) ?? 0;
    if (effectiveIndex > previous) this.ackedVersionByKey.set(key, effectiveIndex);
    if (this.probeAck === null && commandId >= this.probeFromCommandId) {
      this.probeAck = { index, timeMs: this.world.nowMs };
    }
  }

  /** From now on, count the first acknowledged new write as the liveness probe. */
  startProbe(): void {
    this.probeFromCommandId = this.nextCommandId;
  }

  onReadServed(node: SimNode, context: number): void {
    const read = this.reads.get(context);
    if (read === undefined || read.member !== node.id) return;
    this.reads.delete(context);
    this.world.stats.readsServed++;
    const version = node.readVersion(read.key);
    if (this.world.tracing)
      this.world.traceNode(node, `read #${context} ${read.key} = v${version}`);
    if (version < read.floorVersion) {
      this.world.report(
        'linearizable read',
        `read #${context} of ${read.key} on member ${node.id} (began at ${read.startMs} ms) saw version ${version}, but version ${read.floorVersion} was acknowledged before it began`,
      );
    }
  }

  onReadDropped(node: SimNode, context: number): void {
    const read = this.reads.get(context);
    if (read !== undefined && read.member === node.id) this.reads.delete(context);
  }

  private target(): SimNode | null {
    const guess = this.world.nodes.get(this.leaderGuess);
    if (guess !== undefined && guess.state === 'running') return guess;
    const nodes = this.world.runningNodes();
    if (nodes.length === 0) return null;
    const node = pick(this.random, nodes);
    this.leaderGuess = node.id;
    return node;
  }

  private key(): string {
    return `k${randomInt(this.random, 1, this.world.scenario.keyCount)}`;
  }
}
