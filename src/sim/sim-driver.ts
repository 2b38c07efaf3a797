// The simulator's own driver for one member incarnation. It follows the core's Ready contract
// exactly, as the real server does: append messages leave at once; the snapshot, entries and hard
// state go to the (slow) disk; only when the disk says durable do the other messages leave,
// committed entries get applied and read states get served; then advance. One Ready is in flight
// at a time; whatever the core does meanwhile waits for the next one (that is the batching).
// (server-driver.ts runs the production driver instead; both report through the member's taps.)
import { assert } from '../base/assert.js';
import type { RaftApi, ReadState, Ready } from '../raft/index.js';
import { diskWriteOfReady } from './disk.js';
import type { MemberDriver, NodeWorld, SimNode } from './sim-node.js';
import type { Applier } from './types.js';

export class SimDriver implements MemberDriver {
  private inFlight: { readonly ready: Ready; readonly writeId: number } | null = null;
  private readsWaiting: ReadState[] = [];

  constructor(
    private readonly node: SimNode,
    private readonly world: NodeWorld,
    private readonly core: RaftApi,
    private readonly applier: Applier,
    private readonly compactEveryEntries: number,
    /** The index of the last snapshot this member holds (compacted or installed). */
    private compactedIndex: number,
  ) {}

  private ledgerVersion = 0;

  /** Drive the core until it has nothing to do or a Ready waits for the disk. */
  pump(): void {
    const core = this.core;
    const node = this.node;
    while (this.inFlight === null && core.hasReady()) {
      const ready = core.ready();
      node.observe(ready);
      this.world.send(node, ready.appendMessages);
      if (this.world.messagesBeforeDurable) node.sendMessages(ready.messages);
      if (ready.snapshot !== null || ready.entries.length > 0 || ready.hardState !== null) {
        // The peer ledger travels with the member's writes, as a node keeps it beside its log.
        const ledger = core.ledger();
        const changed = ledger.version !== this.ledgerVersion;
        this.ledgerVersion = ledger.version;
        const { id, doneAtMs } = node.disk.submit(this.world.nowMs, diskWriteOfReady(ready, changed ? ledger.records : null));
        this.inFlight = { ready, writeId: id };
        this.world.scheduleDiskDone(node, id, doneAtMs);
        return;
      }
      this.finish(ready);
    }
  }

  onDiskDone(writeId: number): void {
    const inFlight = this.inFlight;
    if (inFlight === null || inFlight.writeId !== writeId) return;
    this.inFlight = null;
    this.finish(inFlight.ready);
    this.pump();
  }

  stop(): void {
    this.inFlight = null;
    this.readsWaiting = [];
  }

  private finish(ready: Ready): void {
    const node = this.node;
    if (!this.world.messagesBeforeDurable) node.sendMessages(ready.messages);
    if (ready.snapshot !== null) {
      node.installSnapshot(ready.snapshot);
      this.compactedIndex = ready.snapshot.meta.index;
    }
    for (const entry of ready.committed) node.applyEntry(entry);
    this.readsWaiting.push(...ready.readStates);
    for (const context of ready.droppedReads) this.world.onReadDropped(node, context);
    this.serveReads();
    this.core.advance(ready);
    this.maybeCompact();
  }

  private serveReads(): void {
    if (this.readsWaiting.length === 0) return;
    const applied = this.applier.appliedIndex();
    const waiting: ReadState[] = [];
    for (const read of this.readsWaiting) {
      if (read.index <= applied) this.world.onReadServed(this.node, read.context);
      else waiting.push(read);
    }
    this.readsWaiting = waiting;
  }

  private maybeCompact(): void {
    const core = this.core;
    const applied = this.applier.appliedIndex();
    if (applied - this.compactedIndex < this.compactEveryEntries) return;
    // A snapshot from the leader may have been stepped in while this Ready was on disk: the core
    // is then already past what this state machine has applied, and compacting here is moot.
    if (core.status().firstIndex - 1 >= applied) return;
    const snapshot = core.compact(applied, this.applier.snapshot());
    assert(snapshot.meta.index === applied, 'the core compacts exactly where asked');
    this.compactedIndex = applied;
    this.node.log.compact(applied);
    const { id, doneAtMs } = this.node.disk.submit(this.world.nowMs, { kind: 'compact', snapshot });
    this.world.scheduleDiskDone(this.node, id, doneAtMs);
  }
}
