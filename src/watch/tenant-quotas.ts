// Tenants' watch quotas on one node (issue #28): how many watches a tenant has open here
// (maxWatches), the undelivered bytes queued for its watchers here (maxWatchBytes) and the events
// delivered to them per second here (eventsPerSecond). The hub asks at a watch's creation, tells
// the account what each of its watchers queues and delivers, and ends a tenant's slowest watchers
// when its queued bytes pass the limit: only that tenant's, never another's. An event rate over
// the limit delays delivery (the queue, or history for a watcher catching up, holds the events);
// a delayed watcher whose queue then passes a buffer limit ends as a slow consumer like any other.
// Time comes through injected functions: the core takes no clock or timer itself.
import { assert } from '../base/assert.js';
import type { QuotaExceededError } from '../base/errors.js';
import { admissionError, unlimited, type TenantLimits, type TenantRecord } from '../base/tenants.js';

export interface TenantWatchDeps {
  /** The tenant owning `key` as applied on this node, or null. */
  tenantOf(key: string): TenantRecord | null;
  /** The table as applied now: the same array until it changes (limits are re-read then). */
  tenants(): readonly TenantRecord[];
  nowMs(): number;
  /** Wakes the watchers of a tenant whose event rate made them wait. */
  schedule(callback: () => void, ms: number): { cancel(): void };
  /** Stamps a refusal's Retry-After (jittered, from `waitMs`) and counts it for the node's metrics. */
  refuse(error: QuotaExceededError, waitMs: number): QuotaExceededError;
}

/** What an account needs of a watcher (src/watch/watcher.ts). */
export interface AccountedWatcher {
  readonly queuedBytes: number;
  readonly queueLength: number;
  /** Waiting for its tenant's event rate: not stepped until woken. */
  paced: boolean;
  /** Its tenant's rate allows delivery again: back on its connection's ready list. */
  wake(): void;
}

/** One tenant's watch use on this node. */
export class TenantWatchAccount {
  watchers = 0;
  /** Invariant: the sum of queuedBytes over this tenant's live watchers on this node. */
  bytes = 0;
  /** Watchers holding queued batches: where the slowest is looked for. */
  readonly backlogged = new Set<AccountedWatcher>();
  /** Watchers waiting for the event rate. */
  readonly paced = new Set<AccountedWatcher>();
  /** Watchers this tenant's buffered-bytes quota ended here, since the node started. */
  slowEnded = 0;
  /** Times a watcher of this tenant had to wait for the event rate. */
  pacedWaits = 0;
  private wakeTimer: { cancel(): void } | null = null;
  /** The event-rate bucket: may go below zero (a batch is never split), refills at the rate. */
  private tokens = Number.NaN;
  private tokensAtMs = 0;
  /** Events delivered in the current and the last whole second (the metric's use). */
  private window = { startMs: 0, count: 0, last: 0 };

  constructor(
    readonly name: string,
    public limits: TenantLimits,
  ) {}

  /** Queued bytes of `watcher` changed by `delta` (its queue already changed). */
  queued(watcher: AccountedWatcher, delta: number): void {
    this.bytes += delta;
    assert(this.bytes >= 0, 'a tenant\'s queued watch bytes never go below zero');
    if (watcher.queueLength > 0) this.backlogged.add(watcher);
    else this.backlogged.delete(watcher);
  }

  /**
   * Milliseconds until the event rate lets `watcher` deliver (0: now). A batch goes when the
   * bucket holds a whole token and takes one per event, so the long-run rate holds even for
   * batches larger than a second's worth.
   */
  waitMs(nowMs: number): number {
    const rate = this.limits.eventsPerSecond;
    if (rate === null) return 0;
    this.refill(rate, nowMs);
    if (this.tokens >= 1) return 0;
    return rate === 0 ? 60_000 : Math.ceil(((1 - this.tokens) * 1000) / rate);
  }

  /** `events` events were handed to the edge for one of this tenant's watchers. */
  delivered(events: number, nowMs: number): void {
    if (events === 0) return;
    const rate = this.limits.eventsPerSecond;
    if (rate !== null) {
      this.refill(rate, nowMs);
      this.tokens -= events;
    }
    const age = nowMs - this.window.startMs;
    if (age >= 1000) {
      this.window.last = age < 2000 ? this.window.count : 0;
      this.window.startMs = age < 2000 ? this.window.startMs + 1000 : nowMs;
      this.window.count = 0;
    }
    this.window.count += events;
  }

  /** Events delivered to this tenant's watchers here in the last whole second. */
  perSecond(nowMs: number): number {
    const age = nowMs - this.window.startMs;
    return age < 1000 ? this.window.last : age < 2000 ? this.window.count : 0;
  }

  /** `watcher` waits for the rate; one timer per tenant wakes every waiting watcher. */
  pace(watcher: AccountedWatcher, waitMs: number, schedule: TenantWatchDeps['schedule']): void {
    watcher.paced = true;
    this.paced.add(watcher);
    this.pacedWaits++;
    if (this.wakeTimer !== null) return;
    this.wakeTimer = schedule(() => this.wakeAll(), waitMs);
  }

  /** `watcher` ended: it holds nothing and waits for nothing any more. */
  forget(watcher: AccountedWatcher): void {
    this.backlogged.delete(watcher);
    this.paced.delete(watcher);
    watcher.paced = false;
    this.watchers--;
    assert(this.watchers >= 0, 'a tenant\'s watch count never goes below zero');
  }

  /** Wakes the waiting watchers in the order they started waiting; those still early wait again. */
  wakeAll(): void {
    this.wakeTimer?.cancel();
    this.wakeTimer = null;
    const waking = [...this.paced];
    this.paced.clear();
    for (const watcher of waking) {
      watcher.paced = false;
      watcher.wake();
    }
  }

  /** The watcher holding the most queued bytes among those behind by more than one batch. */
  slowest(): AccountedWatcher | null {
    let slowest: AccountedWatcher | null = null;
    for (const watcher of this.backlogged) {
      // One batch is only the newest chunk, not a reader behind: an empty queue takes any batch.
      if (watcher.queueLength < 2) continue;
      if (slowest === null || watcher.queuedBytes > slowest.queuedBytes) slowest = watcher;
    }
    return slowest;
  }

  stop(): void {
    this.wakeTimer?.cancel();
    this.wakeTimer = null;
  }

  private refill(rate: number, nowMs: number): void {
    if (Number.isNaN(this.tokens)) {
      this.tokens = rate;
      this.tokensAtMs = nowMs;
    }
    const elapsed = Math.max(0, nowMs - this.tokensAtMs);
    this.tokens = Math.min(rate, this.tokens + (elapsed * rate) / 1000);
    this.tokensAtMs = Math.max(this.tokensAtMs, nowMs);
  }
}

/** The accounts of every tenant with watches on this node. */
export class TenantWatchQuotas {
  private readonly accounts = new Map<string, TenantWatchAccount>();
  private knownTable: readonly TenantRecord[] | null = null;

  constructor(readonly deps: TenantWatchDeps) {}

  /**
   * Admits a new watch on `key`: its tenant's account (the watcher reports to it), null when no
   * tenant owns the key, or throws quota_exceeded past the tenant's watches, its buffered bytes, or
   * an event rate of 0 (nothing would ever be delivered). `resuming`: the same watch re-created
   * from where it stopped (the gRPC facade's slow watchers): the bytes do not refuse it, since it
   * starts by catching up from history, which buffers nothing.
   */
  admit(key: string, resuming = false): TenantWatchAccount | null {
    const tenant = this.deps.tenantOf(key);
    if (tenant === null) return null;
    const account = this.accountOf(tenant);
    const { maxWatches, maxWatchBytes, eventsPerSecond } = account.limits;
    if (maxWatches !== null && account.watchers >= maxWatches) {
      throw this.deps.refuse(admissionError(tenant.name, 'watches', maxWatches, account.watchers), 1000);
    }
    if (!resuming && maxWatchBytes !== null && account.bytes > 0 && account.bytes >= maxWatchBytes) {
      throw this.deps.refuse(admissionError(tenant.name, 'watch_bytes', maxWatchBytes, account.bytes), 1000);
    }
    if (eventsPerSecond === 0) {
      throw this.deps.refuse(admissionError(tenant.name, 'events_per_second', 0, account.perSecond(this.deps.nowMs())), 60_000);
    }
    account.watchers++;
    return account;
  }

  /** An account by tenant name (metrics); null when the tenant has no watch state here. */
  account(name: string): TenantWatchAccount | null {
    this.refreshLimits();
    return this.accounts.get(name) ?? null;
  }

  /** Current limits for every account (call before deciding with them). */
  refreshLimits(): void {
    const table = this.deps.tenants();
    if (table === this.knownTable) return;
    this.knownTable = table;
    const byName = new Map(table.map((t) => [t.name, t]));
    for (const [name, account] of this.accounts) {
      const record = byName.get(name);
      // A deleted tenant's watches stay open and count to no limit.
      account.limits = record?.limits ?? unlimited;
      // A raised or removed rate may let waiting watchers go now.
      if (account.paced.size > 0) account.wakeAll();
      if (account.watchers === 0 && record === undefined) this.accounts.delete(name);
    }
  }

  /**
   * Whether `watcher` of `account` must wait for its tenant's event rate before an output that may
   * carry events (a queued batch with events, or a catch-up read); a waiting watcher is woken by
   * its tenant's timer. Outputs without events (progress, ends) never wait.
   */
  mustWait(watcher: AccountedWatcher, account: TenantWatchAccount): boolean {
    this.refreshLimits();
    if (account.limits.eventsPerSecond === null) return false;
    const waitMs = account.waitMs(this.deps.nowMs());
    if (waitMs === 0) return false;
    account.pace(watcher, waitMs, this.deps.schedule);
    return true;
  }

  /** `events` events of `account`'s were handed to the edge. */
  delivered(account: TenantWatchAccount | null, events: number): void {
    if (account !== null && events > 0) account.delivered(events, this.deps.nowMs());
  }

  stop(): void {
    for (const account of this.accounts.values()) account.stop();
  }

  private accountOf(tenant: TenantRecord): TenantWatchAccount {
    this.refreshLimits();
    let account = this.accounts.get(tenant.name);
    if (account === undefined) this.accounts.set(tenant.name, (account = new TenantWatchAccount(tenant.name, tenant.limits)));
    return account;
  }
}
