// The node's watch service at the edge: the hub, fed after every applied batch, and the hooks
// its transports (SSE and the stream) register so that a stopping node ends every stream
// cleanly: each watcher hears `unavailable` with its last revision, then its socket closes.
import { UnavailableError, type BatonError } from '../../base/errors.js';
import { WatchHub, defaultWatchLimits, type TenantWatchQuotas, type WatchBatch, type WatchNamespaces, type WatchSource, type WatchSpec } from '../../watch/index.js';
import { EventLag } from './event-lag.js';
import { watchAccesses, type AccessGuard } from '../../auth/index.js';
import { defaultWatchServiceOptions, type WatchServiceOptions, type WatchTag } from './types.js';

export class WatchService {
  readonly hub: WatchHub<WatchTag>;
  readonly options: WatchServiceOptions;
  private readonly closers = new Set<() => void>();
  private stopping = false;
  /** The ownership changes already judged for open watches (see `moves`). */
  private ownershipChanges = 0;
  private leaderless = false;
  private leaderlessTimer: ReturnType<typeof setTimeout> | null = null;

  /** Apply-to-hand-off times (event-lag.ts); null: not measured. */
  private readonly lag: EventLag | null;

  constructor(
    source: WatchSource,
    /** Decides each watch of a connection's principal, at creation and before every batch. */
    private readonly guard: AccessGuard,
    options: Partial<WatchServiceOptions> = {},
    /** wrong_cell / cross_cell for keys this cell does not own alone (docs/design/cells.md); null: owns all. */
    private readonly refuseKeys: ((spec: { key: string; prefix: boolean }) => BatonError | null) | null = null,
    /** Tenants' watch quotas on this node (#28, src/watch/tenant-quotas.ts); null: none. */
    readonly tenantQuotas: TenantWatchQuotas | null = null,
    /**
     * Moves: the latest ownership change applied here (a counter) and where this cell's history of
     * each namespace ends and begins (MvccStore.watchBounds). A watch whose keys this cell no longer
     * takes writes for (fenced or moved away) ends with wrong_cell at its namespace's fence, after
     * what it has to deliver; one starting at or below a landed namespace's floor is compacted.
     */
    private readonly moves: (WatchNamespaces & { lastChange(): { count: number } }) | null = null,
  ) {
    this.options = { ...defaultWatchServiceOptions, limits: defaultWatchLimits, ...options };
    this.hub = new WatchHub<WatchTag>(source, this.options.limits, {}, tenantQuotas, moves);
    const onLag = this.options.onEventLag;
    this.lag = onLag === undefined ? null : new EventLag(source.revision, onLag);
  }

  /** An edge handed `batch` to a client's connection (the event lag metric). */
  delivered(batch: WatchBatch): void {
    const last = batch.events[batch.events.length - 1];
    if (last !== undefined) this.lag?.delivered(last.revision);
  }

  get isStopping(): boolean {
    return this.stopping;
  }

  /** Call after every applied batch (the driver's onApplied). */
  onApplied(): void {
    // Ownership first: a watch of a namespace fenced in this batch must not be handed the batch's
    // fan-out through a revision past its fence (hub.endMoved).
    if (this.moves !== null && !this.stopping) {
      const change = this.moves.lastChange();
      if (change.count !== this.ownershipChanges) {
        this.ownershipChanges = change.count;
        this.hub.endMoved();
      }
    }
    if (!this.stopping) this.hub.onApplied();
    this.lag?.applied(this.hub.revision);
  }

  /** Call on every leader change (0 = no leader known). */
  onLeaderChange(leader: number): void {
    if (leader !== 0) {
      if (this.leaderlessTimer !== null) clearTimeout(this.leaderlessTimer);
      this.leaderlessTimer = null;
      this.leaderless = false;
      return;
    }
    if (this.leaderlessTimer !== null || this.leaderless || this.stopping) return;
    this.leaderlessTimer = setTimeout(() => {
      this.leaderlessTimer = null;
      this.leaderless = true;
      this.hub.endAll('leaderless');
    }, this.options.leaderlessEndMs);
    this.leaderlessTimer.unref();
  }

  /** The admission a connection of `principal` ('' anonymous) opens its hub connection with. */
  admitter(principal: string): (spec: WatchSpec) => boolean {
    const guard = this.guard;
    return (spec) => guard.allows(principal, () => watchAccesses(spec));
  }

  /** Throws UnavailableError while this node should not start watches. */
  checkServing(): void {
    if (this.stopping) throw new UnavailableError('the node is stopping: watch on another node');
    if (this.leaderless) {
      throw new UnavailableError('this node has no leader: its state may be stale; watch on another node');
    }
  }

  /** Throws wrong_cell or cross_cell for a watch of a namespace this cell does not own. */
  checkOwned(spec: { key: string; prefix: boolean }): void {
    const refused = this.refuseKeys?.(spec) ?? null;
    if (refused !== null) throw refused;
  }

  /** A transport's way to close its sockets when the node stops; returns the unregister. */
  onStop(closer: () => void): () => void {
    this.closers.add(closer);
    return () => this.closers.delete(closer);
  }

  /**
   * Ends every watcher with `stopped`, gives the transports a turn to write those ends, then
   * closes their sockets. Resolves once all of that was started (sockets close on their own).
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.leaderlessTimer !== null) clearTimeout(this.leaderlessTimer);
    this.hub.stop();
    // Pumps flush on setImmediate: two turns let every end message reach its socket.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    for (const closer of [...this.closers]) closer();
    this.closers.clear();
  }
}
