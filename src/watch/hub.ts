// The watch hub of one node: watchers over the node's own applied state. After every applied
// batch the edge calls onApplied(); the hub reads the new events from stored history (committed
// revisions only) and fans them out to synced watchers by reference. Watchers that start in the
// past catch up from history one bounded chunk per step, pulled by their connection at the pace
// the client reads, and join the live fan-out at exactly hub.revision + 1: everything runs on one
// thread, so nothing is applied between the last catch-up read and joining (no gap, no duplicate).
import { assert } from '../base/assert.js';
import { BatonError, CompactedError, PermissionDeniedError, QuotaExceededError, SlowConsumerError } from '../base/errors.js';
import type { MvccEvent } from '../mvcc/index.js';
import { WatchConnection } from './connection.js';
import { eventBytes, readHistory, watchMatches, type HistoryChunk } from './history.js';
import { WatchIndex, type WatchGroup } from './watch-index.js';
import { Watcher } from './watcher.js';
import type { TenantWatchAccount, TenantWatchQuotas } from './tenant-quotas.js';
import {
  defaultWatchLimits,
  type WatchBatch,
  type WatchBugs,
  type WatchEndReason,
  type WatchLimits,
  type WatchNamespaces,
  type WatchOutput,
  type WatchSource,
  type WatchSpec,
} from './types.js';

export class WatchHub<Tag> {
  /** Invariant: every event at or below this has been fanned out to the synced watchers. */
  private hubRevision: number;
  private readonly index = new WatchIndex<Tag>();
  private readonly waiting = new Set<Watcher<Tag>>();
  private readonly connections = new Set<WatchConnection<Tag>>();
  private watcherCount = 0;
  private stopped = false;
  private readonly bufferLimits: { eventsMax: number; bytesMax: number };

  constructor(
    private readonly source: WatchSource,
    readonly limits: WatchLimits = defaultWatchLimits,
    private readonly bugs: WatchBugs = {},
    /** Tenants' watch quotas on this node (#28): watches, buffered bytes, event rate; null: none. */
    private readonly tenantQuotas: TenantWatchQuotas | null = null,
    /** Where this cell's history of each namespace ends and begins across moves; null: one cell. */
    private readonly namespaces: WatchNamespaces | null = null,
  ) {
    assert(limits.readEventsMax >= 1 && limits.catchUpReadsPerStepMax >= 1, 'reads make progress');
    assert(limits.bufferedEventsMax >= 1 && limits.bufferedBytesMax >= 1, 'buffers hold something');
    this.hubRevision = source.revision;
    this.bufferLimits = { eventsMax: limits.bufferedEventsMax, bytesMax: limits.bufferedBytesMax };
  }

  get revision(): number {
    return this.hubRevision;
  }

  /** Watchers ended on this node, by reason (`compacted`: a compaction reset). */
  readonly ended: Record<WatchEndReason, number> = {
    compacted: 0, slow_consumer: 0, canceled: 0, stopped: 0, leaderless: 0, permission_denied: 0, wrong_cell: 0,
  };

  /** Live watchers on this node (the per-node quota counts these). */
  get size(): number {
    return this.watcherCount;
  }

  openConnection(onReady: () => void, admits: (spec: WatchSpec) => boolean): WatchConnection<Tag> {
    assert(!this.stopped, 'no connections after stop');
    const connection = new WatchConnection<Tag>(this, onReady, admits);
    this.connections.add(connection);
    return connection;
  }

  /** Called by a connection once it has canceled its watchers. */
  forget(connection: WatchConnection<Tag>): void {
    assert(connection.watchers.size === 0, 'a forgotten connection has no watchers');
    this.connections.delete(connection);
  }

  /**
   * Registers a watcher. Its start is resolved now (0 = current + 1) and never changes. A start
   * below the compaction point is accepted and ends at the first step with `compacted`, so every
   * transport reports it the same way. Throws QuotaExceededError past the node's, the connection's
   * or the tenant's quotas. `resuming`: the same watch re-created where it stopped (a slow
   * watcher the gRPC facade resumes unseen): its tenant's buffered bytes do not refuse it.
   */
  create(connection: WatchConnection<Tag>, tag: Tag, spec: WatchSpec, resuming = false): Watcher<Tag> {
    assert(!connection.isClosed, 'no watchers on a closed connection');
    assert(spec.startRevision >= 0 && Number.isSafeInteger(spec.startRevision), 'a valid start');
    if (this.stopped) throw new QuotaExceededError('the node is stopping: watch elsewhere');
    if (!connection.admits(spec)) throw new PermissionDeniedError('permission denied');
    if (this.watcherCount >= this.limits.watchersPerNodeMax) {
      throw new QuotaExceededError(`this node serves ${this.watcherCount} watchers, its limit`, {
        limit: this.limits.watchersPerNodeMax,
      });
    }
    if (connection.watchers.size >= this.limits.watchersPerConnectionMax) {
      throw new QuotaExceededError(`this connection has ${connection.watchers.size} watchers, its limit`, {
        limit: this.limits.watchersPerConnectionMax,
      });
    }
    // Last: a watch refused for another reason takes no slot of its tenant.
    const account = this.tenantQuotas?.admit(spec.key, resuming) ?? null;
    const bounds = this.namespaces?.bounds(spec) ?? null;
    const fence = bounds?.fence ?? null;
    const closing = fence !== null && fence.revision <= this.hubRevision ? { error: fence.error, fenceRevision: fence.revision } : null;
    // "From now" of a namespace that left: this cell's revision is no revision of the namespace
    // (its new owner counts on from its own floor), so now is the fence; the end says so.
    const now = closing === null ? this.hubRevision + 1 : closing.fenceRevision + 1;
    const start = spec.startRevision === 0 ? now : spec.startRevision;
    const watcher = new Watcher<Tag>(tag, spec, start, connection);
    watcher.tenant = account;
    watcher.readLimit = this.limits.readEventsMax;
    watcher.closing = closing;
    watcher.historyFloor = bounds?.floor ?? 0;
    this.watcherCount++;
    connection.watchers.add(watcher);
    // Closing or refused: its first step ends it (as a compacted start), after its history to the fence.
    if (closing !== null || start <= watcher.historyFloor) connection.markReady(watcher);
    else if (start === this.hubRevision + 1) this.join(watcher);
    else if (start > this.hubRevision + 1) this.wait(watcher);
    else connection.markReady(watcher);
    return watcher;
  }

  /** Ends a watcher at the client's request; returns its last delivered revision. */
  cancel(watcher: Watcher<Tag>): number {
    if (watcher.state !== 'ended') this.end(watcher, 'canceled', null);
    // A pending end (compacted, slow_consumer) is superseded: the client is not listening.
    watcher.pendingEnd = null;
    return watcher.lastRevision;
  }

  /** Fans out everything applied since the last call. Call after every applied batch. */
  onApplied(): void {
    // A tenant table change is applied like any entry: new limits count from here (a raised rate
    // wakes the watchers waiting for it).
    this.tenantQuotas?.refreshLimits();
    const target = this.source.revision;
    assert(target >= this.hubRevision, 'the applied revision never goes back');
    // No synced watcher: nobody needs the live fan-out, so the history is not read at all (a
    // catching-up watcher reads it itself, up to hubRevision, before it joins).
    if (this.index.size === 0) this.hubRevision = target;
    while (this.hubRevision < target) {
      let chunk: HistoryChunk;
      try {
        chunk = this.readChunk(this.hubRevision + 1, target);
      } catch (error) {
        if (!(error instanceof CompactedError)) throw error;
        // Compacted before the hub saw it (a compaction in the same applied batch as the writes,
        // or a snapshot install): synced watchers may have missed events, so they end loudly.
        for (const watcher of this.index.allMembers()) this.end(watcher, 'compacted', error);
        this.hubRevision = target;
        break;
      }
      assert(chunk.throughRevision > this.hubRevision, 'the live fan-out makes progress');
      this.fanOut(chunk);
      this.hubRevision = chunk.throughRevision;
    }
    for (const watcher of this.waiting) {
      if (watcher.startRevision > this.hubRevision + 1) continue;
      this.waiting.delete(watcher);
      if (watcher.startRevision === this.hubRevision + 1) this.join(watcher);
      else {
        watcher.state = 'catchingUp';
        watcher.owner.markReady(watcher);
      }
    }
  }

  /**
   * Queues a progress notification: nothing at or below its revision is pending. Skipped while
   * the watcher waits for a future start (it has nothing true to say yet).
   */
  progress(watcher: Watcher<Tag>): void {
    // A closing watcher says nothing past its fence (its end names where to resume).
    if (watcher.state === 'ended' || watcher.state === 'waiting' || watcher.closing !== null) return;
    const revision = watcher.state === 'synced' ? this.hubRevision : watcher.nextRevision - 1;
    assert(revision >= watcher.lastRevision, 'progress never goes back');
    // A queued batch at or past it tells the client as much; an empty queue always gets one
    // (it doubles as a heartbeat on an otherwise quiet stream).
    if (watcher.queueLength > 0 && watcher.queuedThrough >= revision) return;
    watcher.push({ revision, events: [], bytes: 0 });
  }

  /** The next output of one watcher (its connection calls this, round-robin). */
  step(watcher: Watcher<Tag>): WatchOutput<Tag> | null {
    if (watcher.pendingEnd !== null) {
      const end = watcher.pendingEnd;
      watcher.pendingEnd = null;
      return end;
    }
    if (watcher.hasOutput && !watcher.owner.admits(watcher.spec)) {
      // Nothing more is delivered: the end says what was (resume after lastRevision, if allowed again).
      this.end(watcher, 'permission_denied', new PermissionDeniedError('permission denied'));
      return this.step(watcher);
    }
    const account = watcher.tenant;
    if (account !== null && this.tenantQuotas !== null && this.carriesEvents(watcher)) {
      // Over its tenant's event rate: the events wait (queued, or in history), never dropped.
      if (this.tenantQuotas.mustWait(watcher, account)) return null;
    }
    const queued = watcher.shift();
    if (queued !== null) {
      this.tenantQuotas?.delivered(account, queued.events.length);
      return { type: 'batch', tag: watcher.tag, batch: queued };
    }
    if (watcher.state !== 'catchingUp') return null;
    const batch = this.catchUp(watcher);
    if (batch === null) return watcher.pendingEnd !== null ? this.step(watcher) : null;
    watcher.lastRevision = batch.revision;
    this.tenantQuotas?.delivered(account, batch.events.length);
    return { type: 'batch', tag: watcher.tag, batch };
  }

  /** Whether the next output of `watcher` may carry events: a queued batch of events, or a catch-up read. */
  private carriesEvents(watcher: Watcher<Tag>): boolean {
    const head = watcher.peek();
    return head === null ? watcher.state === 'catchingUp' : head.events.length > 0;
  }

  /**
   * Ends with wrong_cell every watcher whose namespace was fenced or moved away (the hub's
   * namespaces give each its own fence: this cell has no event of it above that). Each first
   * delivers what it has queued and what history still holds for it up to its fence, so a client
   * that resumes on the destination from fence + 1 misses nothing and sees nothing twice. Call
   * right BEFORE onApplied() of a batch that changed ownership: its fan-out would hand a synced
   * watcher a batch through the batch's last revision, past a fence inside it (a claim the
   * destination's revisions contradict). Returns how many were told to end.
   */
  endMoved(): number {
    if (this.namespaces === null) return 0;
    let count = 0;
    for (const connection of this.connections) {
      for (const watcher of [...connection.watchers]) {
        if (watcher.state === 'ended' || watcher.closing !== null) continue;
        const fence = this.namespaces.bounds(watcher.spec).fence;
        if (fence === null) continue;
        assert(fence.revision <= this.source.revision, 'a fence the store has applied');
        count++;
        watcher.closing = { error: fence.error, fenceRevision: fence.revision };
        if (watcher.state === 'waiting') {
          // Starts after the fence: nothing of it was or will be here.
          if (watcher.startRevision > fence.revision) {
            this.closeMoved(watcher);
            continue;
          }
          // It waited for a start the batch being applied reaches (a member catching up: one
          // batch carries the revisions from its start to the fence and beyond). Those up to the
          // fence are this cell's and are delivered first: it reads them from history once the
          // batch is fanned out, as any closing watcher does (the cells simulator with --feed,
          // seed 29333: ended at the fence with its start..fence never delivered, a move's feed
          // took that end as "every change is in it" and lost writes).
          this.waiting.delete(watcher);
          watcher.state = 'catchingUp';
        }
        if (watcher.state === 'synced') {
          // Everything up to the hub's revision is queued: drain the queue, then end (catchUp joins).
          this.index.remove(watcher);
          watcher.state = 'catchingUp';
          watcher.nextRevision = this.hubRevision + 1;
        }
        watcher.owner.markReady(watcher);
      }
    }
    return count;
  }

  /** Ends with wrong_cell a closing watcher that has delivered everything (see endMoved). */
  private closeMoved(watcher: Watcher<Tag>): void {
    const closing = watcher.closing as { error: BatonError; fenceRevision: number };
    // Nothing of its namespace was written here above the fence, and the destination holds none
    // of its events at or below it: the client resumes right after the fence (or its own start).
    watcher.lastRevision = Math.max(watcher.startRevision - 1, closing.fenceRevision);
    this.end(watcher, 'wrong_cell', closing.error);
  }

  /** Ends every watcher with `stopped` and takes no more (the node is stopping). */
  stop(): void {
    this.stopped = true;
    this.endAll('stopped');
    this.tenantQuotas?.stop();
  }

  /** Ends every watcher (clients resume elsewhere); new watchers are still accepted. */
  endAll(reason: 'stopped' | 'leaderless'): void {
    for (const connection of this.connections) {
      for (const watcher of [...connection.watchers]) this.end(watcher, reason, null);
    }
    assert(this.watcherCount === 0 && this.index.size === 0 && this.waiting.size === 0, 'all ended');
  }

  private end(watcher: Watcher<Tag>, reason: WatchEndReason, error: BatonError | null): void {
    assert(watcher.state !== 'ended', 'a watcher ends once');
    this.ended[reason]++;
    if (watcher.state === 'synced') this.index.remove(watcher);
    if (watcher.state === 'waiting') this.waiting.delete(watcher);
    watcher.state = 'ended';
    watcher.dropQueue();
    watcher.tenant?.forget(watcher);
    watcher.tenant = null;
    this.watcherCount--;
    const connection = watcher.owner;
    connection.watchers.delete(watcher);
    assert(this.watcherCount >= 0 && this.watcherCount >= this.index.size, 'watcher counts agree');
    if (reason === 'canceled') return;
    watcher.pendingEnd = { type: 'end', tag: watcher.tag, reason, error, lastRevision: watcher.lastRevision };
    connection.markReady(watcher);
  }

  private join(watcher: Watcher<Tag>): void {
    if (watcher.closing !== null) {
      this.closeMoved(watcher);
      return;
    }
    assert(watcher.nextRevision === this.hubRevision + 1, 'a watcher joins exactly at the live edge');
    assert(watcher.queueLength === 0 || watcher.queuedThrough <= this.hubRevision, 'nothing queued ahead');
    watcher.state = 'synced';
    this.index.add(watcher);
  }

  private wait(watcher: Watcher<Tag>): void {
    watcher.state = 'waiting';
    this.waiting.add(watcher);
  }

  /** One catch-up step: a batch of matching events, a progress batch, or null (joined/ended). */
  private catchUp(watcher: Watcher<Tag>): WatchBatch | null {
    if (watcher.nextRevision <= watcher.historyFloor) {
      // Landed from another cell, which holds these revisions of the namespace: this cell does not.
      const floor = watcher.historyFloor;
      this.end(watcher, 'compacted', new CompactedError(floor, `this cell holds the watched namespace's history only above revision ${floor} (it arrived from another cell): read it again and watch from ${floor + 1}`, { floor }));
      return null;
    }
    // A closing watcher reads no further than its fence (nothing of its namespace is above it);
    // it is stepped only after the batch holding its fence was fanned out (endMoved).
    assert(watcher.closing === null || watcher.closing.fenceRevision <= this.hubRevision, 'a fence the hub has fanned out');
    const through = watcher.closing === null ? this.hubRevision : Math.min(this.hubRevision, watcher.closing.fenceRevision);
    for (let reads = 0; reads < this.limits.catchUpReadsPerStepMax; reads++) {
      if (watcher.nextRevision > through) {
        this.join(watcher);
        return null;
      }
      let chunk: HistoryChunk;
      try {
        chunk = readHistory(this.source, {
          startRevision: watcher.nextRevision,
          throughRevision: through,
          limit: watcher.readLimit,
          skipCutRevision: this.bugs.skipCutRevision === true,
        });
      } catch (error) {
        if (!(error instanceof CompactedError)) throw error;
        this.end(watcher, 'compacted', error);
        return null;
      }
      assert(chunk.throughRevision >= watcher.nextRevision, 'catch-up makes progress');
      watcher.nextRevision = chunk.throughRevision + 1;
      const events = chunk.events.filter((event) => watchMatches(watcher.spec, event));
      if (events.length > 0) return this.catchUpBatch(watcher, events, chunk.throughRevision);
    }
    // A long stretch with nothing for this watcher: say how far it got, and yield the turn.
    return { revision: watcher.nextRevision - 1, events: [], bytes: 0 };
  }

  /**
   * A catch-up batch of at most about bufferedBytesMax (big values make few events heavy), cut at
   * a revision boundary; the watcher's next revision follows the cut.
   */
  private catchUpBatch(watcher: Watcher<Tag>, events: MvccEvent[], throughRevision: number): WatchBatch {
    let bytes = 0;
    for (let i = 0; i < events.length; i++) {
      const event = events[i] as MvccEvent;
      const next = events[i + 1];
      bytes += eventBytes(event, watcher.spec.prevKv);
      if (bytes >= this.limits.bufferedBytesMax && next !== undefined && next.revision !== event.revision) {
        watcher.nextRevision = event.revision + 1;
        // Read about as many next time: decoding events only to drop them is wasted work.
        watcher.readLimit = Math.max(1, i + 1);
        return { revision: event.revision, events: events.slice(0, i + 1), bytes };
      }
    }
    watcher.readLimit = Math.min(this.limits.readEventsMax, watcher.readLimit * 2);
    return { revision: throughRevision, events, bytes };
  }

  private readChunk(startRevision: number, throughRevision: number): HistoryChunk {
    return readHistory(this.source, { startRevision, throughRevision, limit: this.limits.readEventsMax, skipCutRevision: this.bugs.skipCutRevision === true });
  }

  private fanOut(chunk: HistoryChunk): void {
    const touched: WatchGroup<Tag>[] = [];
    const accounts = new Set<TenantWatchAccount>();
    for (const event of chunk.events) {
      assert(event.revision > this.hubRevision && event.revision <= chunk.throughRevision, 'in the chunk');
      this.index.forEachCovering(event.kv.key, (group) => {
        if (group.filter !== 'all' && group.filter !== event.type) return;
        if (group.pending === null) {
          group.pending = [];
          touched.push(group);
        }
        group.pending.push(event);
        group.pendingBytes += eventBytes(event, group.prevKv);
      });
    }
    for (const group of touched) {
      const batch: WatchBatch = { revision: chunk.throughRevision, events: group.pending ?? [], bytes: group.pendingBytes };
      group.pending = null;
      group.pendingBytes = 0;
      // Backwards: a member that overflows is swap-removed with one already served.
      for (let i = group.members.length - 1; i >= 0; i--) {
        const watcher = group.members[i] as Watcher<Tag>;
        if (watcher.fits(batch, this.bufferLimits)) {
          watcher.push(batch);
          if (watcher.tenant !== null) accounts.add(watcher.tenant);
          continue;
        }
        const error = new SlowConsumerError(
          `the watcher fell ${watcher.queuedEvents} events behind; resume after revision ${watcher.lastRevision}`,
          { lastRevision: watcher.lastRevision },
        );
        this.end(watcher, 'slow_consumer', error);
      }
    }
    // After the whole chunk (ending a watcher mid-loop would reorder a group's members).
    for (const account of accounts) this.shed(account);
  }

  /**
   * Ends the slowest watchers of a tenant over its buffered watch bytes (maxWatchBytes) until it
   * is back under: the one holding the most queued bytes first, as a slow consumer with the
   * revision to resume after. Only this tenant's watchers; a watcher holding just the newest
   * batch is not behind and is never ended for it.
   */
  private shed(account: TenantWatchAccount): void {
    this.tenantQuotas?.refreshLimits();
    const limit = account.limits.maxWatchBytes;
    if (limit === null) return;
    while (account.bytes > limit) {
      const slowest = account.slowest() as Watcher<Tag> | null;
      if (slowest === null) return;
      const error = new SlowConsumerError(
        `tenant ${account.name} is over its watch_bytes quota (${account.bytes} used, limit ${limit}): its slowest watcher ends; resume after revision ${slowest.lastRevision}`,
        { lastRevision: slowest.lastRevision, tenant: account.name, quota: 'watch_bytes', limit, used: account.bytes },
      );
      account.slowEnded++;
      this.end(slowest, 'slow_consumer', error);
    }
  }
}
