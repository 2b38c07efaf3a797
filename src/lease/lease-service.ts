// Leases on a node. Grants and revocations are commands in the log. Renewals are not: the leader
// moves a deadline in its in-memory tracker (src/lease) on its monotonic clock, and followers
// forward keepalives to it. Expiry is a replicated decision: only a leader that has applied its
// own term's first entry (so its tracker starts from every earlier leader's committed table)
// proposes revocations, in bounded batches, each checked against the role at that moment; a
// follower or a deposed leader has an empty tracker and proposes nothing.
import { assert } from '../base/assert.js';
import { BatonError, LeaseNotFoundError, OverloadedError, UnavailableError } from '../base/errors.js';
import { LeaseExpiryTracker } from './expiry-tracker.js';
import { cellWork, storeFormatGrantBatch, storeFormatRevokeBatch, validateLeaseTtl, type ApplyOutcome, type Command, type CommandProposer, type MvccStore, type Origin, type ResultOf } from '../mvcc/index.js';
import { leaseAccess, leaseInfoAccesses, type AccessGuard } from '../auth/index.js';
import type { Entry, MemberId } from '../raft/index.js';
import type { BatchGrantAnswer, BatchGrantItem, KeepaliveAnswer, KeepaliveItem, LeaseApi, LeaseForwarder, LeaseInfo, LeaseList } from './api.js';
import { defaultLeaseServiceOptions, defaultRevokeBatchOptions, type LeaseServiceOptions } from './lease-config.js';
import type { Timers } from '../base/timers.js';

/** What the service needs from the node's driver (src/driver/driver.ts, or the simulator's). */
export interface LeaseDriver {
  readonly isLeader: boolean;
  readonly leaderId: MemberId;
  status(): { readonly term: number };
  linearizableRead(): Promise<void>;
}

/** What the service reads from the replicated state (the MVCC store). */
export type LeaseStore = Pick<
  MvccStore,
  'appliedTerm' | 'revision' | 'limits' | 'lease' | 'leaseOrigin' | 'leases' | 'leasesPage' | 'keysOfLease' | 'storeFormat'
>;

/** Everything from outside, injected: the simulator runs the service on simulated time. */
export interface LeaseServiceDeps {
  readonly memberId: MemberId;
  readonly store: LeaseStore;
  /** The monotonic clock of deadlines and the timers of waits. */
  readonly timers: Timers;
  readonly driver: LeaseDriver;
  /** Grants, revocations and checkpoints go through the log (driver/command-proposer.ts). */
  readonly proposer: CommandProposer;
  /** How a follower passes keepalives and queries to the leader. */
  readonly forwarder: LeaseForwarder;
  /**
   * Authorization at the serving member (grants and revocations are decided in the proposer and
   * at apply). Calls forwarded by another member carry `cellWork`: that member decided them.
   */
  readonly guard: AccessGuard;
  /** Told each keepalive served here (renewed or forwarded), with its duration in ms: the renewal latency metric. */
  readonly onKeepalive?: (ms: number, ok: boolean) => void;
  /** Told each leadership confirmation renewals waited on: its duration in ms and how many keepalives shared it. */
  readonly onConfirmRound?: (ms: number, keepalives: number) => void;
  /**
   * New sessions per second on this member (#28 session storms): a grant or a batch grant past it
   * throws 429 overloaded with staggered guidance (src/base/session-gate.ts). Absent or null: none.
   */
  readonly sessions?: { admit(kind: 'lease_grant'): void } | null;
}

const transientCodes: ReadonlySet<string> = new Set(['unavailable', 'overloaded', 'timeout']);

export class LeaseService implements LeaseApi {
  private readonly tracker: LeaseExpiryTracker;
  /** Test-only bug revokeOnLocalTimer: this member's own deadlines, from the grants it applied. */
  private readonly localTracker: LeaseExpiryTracker | null;
  private readonly driver: LeaseDriver;
  /** The term whose leadership the tracker reflects; 0 = not promoted (empty tracker). */
  private promotedTerm = 0;
  private promotionWaiters: (() => void)[] = [];
  private revokesInFlight = 0;
  private revokeBatchesInFlight = 0;
  /** Leases this node revoked because their TTL ran out (it led then): the expiration rate. */
  expiredTotal = 0;
  private keepalivesInFlight = 0;
  private lastCheckpointMs = 0;
  /** Checkpoint resets being committed, by lease: a second renewal waits for the same one. */
  private readonly resets = new Map<number, Promise<void>>();
  /** Revocations this leader proposed and that have not settled, by lease (see renewAll). */
  private readonly revocations = new Map<number, Promise<unknown>>();
  private stopped = false;
  private readonly store: LeaseStore;
  /** Renewals waiting for the next leadership confirmation (not yet started: see confirmLeadership). */
  private confirmNext: { resolve: () => void; reject: (error: Error) => void }[] = [];
  private confirmInFlight = false;
  private confirmTimer: { cancel(): void } | null = null;
  private lastConfirmStartMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly deps: LeaseServiceDeps,
    private readonly options: LeaseServiceOptions = defaultLeaseServiceOptions,
  ) {
    this.tracker = new LeaseExpiryTracker(options.tracker);
    this.localTracker = options.bugs?.revokeOnLocalTimer === true ? new LeaseExpiryTracker(options.tracker) : null;
    this.store = deps.store;
    this.driver = deps.driver;
  }

  private monotonicMs(): number {
    return this.deps.timers.monotonicMs();
  }

  get keepaliveIdsMax(): number {
    return this.options.keepaliveIdsMax;
  }

  /** Memory and state for metrics and the benchmark. */
  get trackedCount(): number {
    return this.tracker.size;
  }

  stop(): void {
    this.stopped = true;
    this.demote();
    this.confirmTimer?.cancel();
    this.confirmTimer = null;
    const waiters = this.confirmNext;
    this.confirmNext = [];
    for (const waiter of waiters) waiter.reject(new UnavailableError('the node is stopping'));
  }

  // --- leadership -------------------------------------------------------------------------

  // --- what the driver tells it (a DriverListener) ------------------------------------------

  onLeaderChange(): void {
    if (!this.driver.isLeader) this.demote();
  }

  /** Grants and revocations change the tracked deadlines (a duplicate changed nothing). */
  onApplied(_entries: readonly Entry[], outcomes: readonly ApplyOutcome[]): void {
    for (const outcome of outcomes) {
      if (outcome.type !== 'applied' || outcome.duplicate) continue;
      const result = outcome.result;
      if (result.type === 'leaseGrant') this.leaseGranted(result.id, result.ttlMs);
      else if (result.type === 'leaseGrantBatch') this.batchGranted(result.leases);
      else if (result.type === 'leaseRevoke') this.leaseRevoked(result.id);
      else if (result.type === 'leaseRevokeBatch') for (const lease of result.leases) this.leaseRevoked(lease.id);
      // A move recreated these leases here: they renew to their TTL and expire after what is left.
      else if (result.type === 'importKeys') for (const lease of result.leases) this.leaseImported(lease);
    }
    if (this.promotedTerm === 0 && this.driver.isLeader) this.maybePromote();
  }

  /** A snapshot replaced the table: the tracker is rebuilt from it once promoted again. */
  onRestored(): void {
    this.demote();
  }

  private demote(): void {
    this.tracker.clear();
    this.promotedTerm = 0;
    this.resets.clear();
  }

  private maybePromote(): void {
    if (!this.driver.isLeader || this.stopped) return;
    const term = this.driver.status().term;
    if (this.promotedTerm === term) return;
    // Leading again in a newer term (another leader may have served in between): the old
    // deadlines are not this term's; nothing is served until the table is read again.
    if (this.promotedTerm !== 0) this.demote();
    // Only once this term's first entry is applied does the table hold every revocation and
    // checkpoint an earlier leader committed: renewing before that could promise a lease that a
    // committed revocation is about to delete.
    if (this.store.appliedTerm !== term) return;
    const atZero = this.options.bugs?.promoteAtZero === true;
    const leases = this.store.leases().map((l) => ({ id: l.id, ttlMs: l.ttlMs, remainingMs: atZero ? 0 : l.remainingMs }));
    this.tracker.promote(leases, this.monotonicMs());
    this.promotedTerm = term;
    this.lastCheckpointMs = this.monotonicMs();
    const waiters = this.promotionWaiters;
    this.promotionWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private async whenPromoted(): Promise<void> {
    if (this.promotedTerm !== 0) return;
    await new Promise<void>((resolve, reject) => {
      const timer = this.deps.timers.setTimeout(() => {
        this.promotionWaiters = this.promotionWaiters.filter((w) => w !== done);
        reject(new UnavailableError('the new leader is not serving leases yet'));
      }, this.options.requestTimeoutMs);
      const done = (): void => {
        timer.cancel();
        resolve();
      };
      this.promotionWaiters.push(done);
    });
  }

  /**
   * A quorum confirms this node still leads, in a heartbeat round that starts after the call
   * (ReadIndex). A round that started before a renewal arrived could not vouch for it: a newer
   * leader may have promoted its tracker since. So calls join the next round, never the one in
   * flight, and all the calls that arrived before a round starts share it: one ReadIndex call
   * per round, and rounds at most every confirmIntervalMs, however many keepalives arrive (each
   * round is a heartbeat to every follower and its answers, work that puts wait behind).
   */
  private confirmLeadership(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.confirmNext.push({ resolve, reject });
      this.scheduleConfirm();
    });
  }

  private scheduleConfirm(): void {
    if (this.confirmInFlight || this.confirmTimer !== null || this.confirmNext.length === 0) return;
    const intervalMs = this.options.confirmIntervalMs ?? defaultLeaseServiceOptions.confirmIntervalMs ?? 0;
    const waitMs = this.lastConfirmStartMs + intervalMs - this.monotonicMs();
    if (waitMs <= 0) {
      this.startConfirm();
      return;
    }
    this.confirmTimer = this.deps.timers.setTimeout(() => {
      this.confirmTimer = null;
      this.startConfirm();
    }, waitMs);
  }

  private startConfirm(): void {
    const waiters = this.confirmNext;
    this.confirmNext = [];
    if (waiters.length === 0) return;
    this.confirmInFlight = true;
    this.lastConfirmStartMs = this.monotonicMs();
    // The round starts here, after every waiter above arrived.
    this.driver.linearizableRead().then(
      () => this.endConfirm(waiters, null),
      (error: unknown) => this.endConfirm(waiters, error instanceof Error ? error : new Error(String(error))),
    );
  }

  private endConfirm(waiters: readonly { resolve: () => void; reject: (error: Error) => void }[], error: Error | null): void {
    this.confirmInFlight = false;
    this.deps.onConfirmRound?.(this.monotonicMs() - this.lastConfirmStartMs, waiters.length);
    for (const waiter of waiters) {
      if (error === null) waiter.resolve();
      else waiter.reject(error);
    }
    if (!this.stopped) this.scheduleConfirm();
  }

  // --- applied outcomes ------------------------------------------------------------------------

  private leaseGranted(id: number, ttlMs: number): void {
    this.localTracker?.granted(id, ttlMs, this.monotonicMs());
    if (this.promotedTerm !== 0) this.tracker.granted(id, ttlMs, this.monotonicMs());
  }

  private leaseImported(lease: { readonly id: number; readonly ttlMs: number; readonly remainingMs: number }): void {
    const remainingMs = Math.min(lease.remainingMs, lease.ttlMs);
    this.localTracker?.imported(lease.id, lease.ttlMs, remainingMs, this.monotonicMs());
    if (this.promotedTerm !== 0) this.tracker.imported(lease.id, lease.ttlMs, remainingMs, this.monotonicMs());
  }

  /** A batch's leases, all granted at one moment (one clock read for the batch). */
  private batchGranted(leases: readonly { readonly id: number; readonly ttlMs: number }[]): void {
    const local = this.localTracker;
    const tracking = this.promotedTerm !== 0;
    if (local === null && !tracking) return;
    const now = this.monotonicMs();
    for (const lease of leases) {
      local?.granted(lease.id, lease.ttlMs, now);
      if (tracking) this.tracker.granted(lease.id, lease.ttlMs, now);
    }
  }

  private leaseRevoked(id: number): void {
    this.localTracker?.removed(id);
    this.tracker.removed(id);
    this.resets.delete(id);
  }

  // --- the leader's expiry and checkpoint loop (a real-timer tick) ----------------------

  tick(): void {
    if (this.localTracker !== null && !this.stopped && !this.driver.isLeader) this.revokeOnLocalTimer(this.localTracker);
    if (this.stopped || !this.driver.isLeader) return;
    this.maybePromote();
    if (this.promotedTerm === 0) return;
    const now = this.monotonicMs();
    if (this.store.storeFormat >= storeFormatRevokeBatch) this.expireInBatches(now);
    else if (this.revokesInFlight < this.options.revokesInFlightMax) {
      for (const id of this.tracker.expired(now)) this.proposeRevoke(id);
    }
    if (now - this.lastCheckpointMs >= this.options.checkpointIntervalMs) {
      this.lastCheckpointMs = now;
      const leases = this.tracker.checkpoints(now);
      if (leases.length > 0) {
        this.proposeInternal({ type: 'leaseCheckpoint', leases }).catch(() => {
          if (this.promotedTerm !== 0) this.tracker.checkpointFailed(leases.map((l) => l.id));
        });
      }
    }
  }

  /** The planted bug: a follower proposes the revocations its own timer says are due. */
  private revokeOnLocalTimer(local: LeaseExpiryTracker): void {
    for (const id of local.expired(this.monotonicMs())) {
      this.deps.proposer.propose({ type: 'leaseRevoke', id }, undefined, cellWork).catch(() => undefined);
    }
  }

  private proposeRevoke(id: number): void {
    this.revokesInFlight++;
    // lease_not_found (a client revoked it first) is fine; a lost proposal is retried by the
    // tracker after revokeRetryMs, as long as this node still leads.
    const settled = this.proposeInternal({ type: 'leaseRevoke', id })
      .then(() => this.expiredTotal++, () => undefined)
      .finally(() => this.revokesInFlight--);
    this.trackRevocation([id], settled);
  }

  /** Remembers a revocation in flight for each lease it names until it settles. */
  private trackRevocation(ids: readonly number[], settled: Promise<unknown>): void {
    for (const id of ids) this.revocations.set(id, settled);
    void settled.finally(() => {
      for (const id of ids) if (this.revocations.get(id) === settled) this.revocations.delete(id);
    });
  }

  /**
   * Every member applies op 21 (store format 4): the expired leases go in leaseRevokeBatch
   * entries, each bounded in leases and in keys, with at most inFlightMax entries awaiting their
   * commit. Each lease named was marked by the tracker (renewals refuse it from then on), as for
   * one entry per lease; a lost entry's leases are named again after revokeRetryMs.
   */
  private expireInBatches(now: number): void {
    const batch = this.options.revokeBatch ?? defaultRevokeBatchOptions;
    const room = batch.inFlightMax - this.revokeBatchesInFlight;
    if (room <= 0) return;
    // Keys per lease, read once (the table is in the store; a lease already gone weighs nothing).
    const keyCounts = new Map<number, number>();
    const keysOf = (id: number): number => {
      const count = this.store.lease(id)?.keyCount ?? 0;
      keyCounts.set(id, count);
      return count;
    };
    const ids = this.tracker.expired(now, { leasesMax: room * batch.leasesMax, weight: keysOf, weightMax: room * batch.keysMax });
    let entry: number[] = [];
    let keys = 0;
    for (const id of ids) {
      const count = keyCounts.get(id) ?? keysOf(id);
      if (entry.length > 0 && (entry.length >= batch.leasesMax || keys + count > batch.keysMax)) {
        this.proposeRevokeBatch(entry);
        entry = [];
        keys = 0;
      }
      entry.push(id);
      keys += count;
    }
    if (entry.length > 0) this.proposeRevokeBatch(entry);
  }

  private proposeRevokeBatch(ids: readonly number[]): void {
    this.revokeBatchesInFlight++;
    const settled = this.proposeInternal({ type: 'leaseRevokeBatch', ids })
      .then((result) => {
        this.expiredTotal += result.leases.length;
      }, () => undefined)
      .finally(() => {
        this.revokeBatchesInFlight--;
        // A pipeline, not a pass per tick: the next entry goes as soon as one committed, so a
        // mass expiry runs at the commit rate while at most inFlightMax entries are unapplied.
        if (!this.stopped && this.driver.isLeader && this.promotedTerm !== 0 && this.store.storeFormat >= storeFormatRevokeBatch) {
          this.expireInBatches(this.monotonicMs());
        }
      });
    this.trackRevocation(ids, settled);
  }

  /** Proposes only while this node leads: a deposed leader must not even forward. */
  private async proposeInternal<C extends Command>(op: C): Promise<ResultOf<C>> {
    if (!this.driver.isLeader || this.promotedTerm === 0) throw new UnavailableError('not the leader');
    return (await this.deps.proposer.propose(op, undefined, cellWork)).result;
  }

  // --- LeaseApi ------------------------------------------------------------------------------

  async grant(request: { ttlMs: number; id?: number }, requestId: string | undefined, principal: string): Promise<{ id: number; ttl: number; revision: number }> {
    if (this.deps.sessions !== undefined && this.deps.sessions !== null) {
      // A TTL below the cell's minimum stays a 400, never a 429 to retry.
      validateLeaseTtl(request.ttlMs, this.store.limits);
      this.deps.sessions.admit('lease_grant');
    }
    const { result } = await this.deps.proposer.propose({ type: 'leaseGrant', ...request }, requestId, principal);
    return { id: result.id, ttl: result.ttlMs / 1000, revision: result.revision };
  }

  async grantMany(request: { ttlMs: number; count: number }, requestId: string | undefined, principal: string): Promise<BatchGrantAnswer> {
    assert(Number.isSafeInteger(request.count) && request.count >= 1, 'a batch grants at least one lease');
    // A TTL the cell refuses would fail every grant alike: refuse the batch at once (400).
    validateLeaseTtl(request.ttlMs, this.store.limits);
    this.deps.sessions?.admit('lease_grant');
    if (this.store.storeFormat >= storeFormatGrantBatch) return this.grantBatch(request, requestId, principal);
    const grants = Array.from({ length: request.count }, (_, i) =>
      this.deps.proposer.propose({ type: 'leaseGrant', ttlMs: request.ttlMs }, requestId === undefined ? undefined : `${requestId}.${i}`, principal));
    const settled = await Promise.allSettled(grants);
    let revision = 0;
    const leases = settled.map((outcome): BatchGrantItem => {
      if (outcome.status === 'fulfilled') {
        const { result } = outcome.value;
        revision = Math.max(revision, result.revision);
        return { id: result.id, ttl: result.ttlMs / 1000 };
      }
      const error = outcome.reason;
      if (!(error instanceof BatonError)) throw error;
      return { error: error.code, message: error.message };
    });
    return { revision, leases };
  }

  /**
   * One leaseGrantBatch entry (every member applies op 19: the store format says so), all or
   * none: a refusal (the cell's lease quota) is every grant's answer. Its Request-ID is the
   * batch's own, so a retried batch gets the first answer and grants nothing twice.
   */
  private async grantBatch(request: { ttlMs: number; count: number }, requestId: string | undefined, principal: string): Promise<BatchGrantAnswer> {
    // One immutable grant object, named count times (the encoder only reads it).
    const grants = new Array<{ readonly ttlMs: number }>(request.count).fill({ ttlMs: request.ttlMs });
    try {
      const { result } = await this.deps.proposer.propose({ type: 'leaseGrantBatch', grants }, requestId, principal);
      return { revision: result.revision, leases: result.leases.map((lease) => ({ id: lease.id, ttl: lease.ttlMs / 1000 })) };
    } catch (error) {
      // No leader, overload or a timeout is the request's: the client retries the whole batch
      // (with its Request-ID, answered once). A refusal by the state (quota) is every grant's.
      if (!(error instanceof BatonError) || transientCodes.has(error.code)) throw error;
      return { revision: 0, leases: grants.map(() => ({ error: error.code, message: error.message })) };
    }
  }

  async revoke(id: number, requestId: string | undefined, principal: string): Promise<{ id: number; deleted: number; revision: number }> {
    const { result } = await this.deps.proposer.propose({ type: 'leaseRevoke', id }, requestId, principal);
    return { id: result.id, deleted: result.deleted, revision: result.revision };
  }

  async keepalive(ids: readonly number[], forwarded: boolean, origin: Origin): Promise<KeepaliveAnswer> {
    this.check(origin, () => [leaseAccess]);
    // Renewals have their own budget: reads and lists are shed elsewhere (read-gate.ts) first.
    if (this.keepalivesInFlight >= this.options.keepalivesInFlightMax) {
      throw new OverloadedError('too many keepalives in flight; retry shortly');
    }
    this.keepalivesInFlight++;
    const startedMs = this.monotonicMs();
    let ok = false;
    try {
      if (!this.driver.isLeader) {
        const leader = this.leaderToForwardTo(forwarded);
        const answer = await this.deps.forwarder.keepalive(leader, ids, this.options.requestTimeoutMs);
        ok = true;
        return answer;
      }
      this.maybePromote();
      await this.whenPromoted();
      if (this.options.bugs?.renewWithoutQuorum !== true) await this.confirmLeadership();
      const answer = await this.renewAll(ids);
      ok = true;
      return answer;
    } finally {
      this.keepalivesInFlight--;
      this.deps.onKeepalive?.(this.monotonicMs() - startedMs, ok);
    }
  }

  private async renewAll(ids: readonly number[]): Promise<KeepaliveAnswer> {
    // Deposed while confirming: an empty tracker must not answer lease_not_found for live leases.
    this.requireServing();
    const now = this.monotonicMs();
    const items: (KeepaliveItem | null)[] = [];
    const pending: Promise<void>[] = [];
    const resetIds: number[] = [];
    const revoking: number[] = [];
    for (const id of ids) {
      const renewed = this.tracker.renew(id, now);
      if (renewed === null) {
        items.push({ id, error: 'lease_not_found' });
        if (this.tracker.revoking(id)) revoking.push(id);
        continue;
      }
      items.push({ id, ttl: renewed.ttlMs / 1000 });
      const inFlight = this.resets.get(id);
      if (renewed.resetCheckpoint) resetIds.push(id);
      else if (inFlight !== undefined) pending.push(inFlight);
    }
    if (resetIds.length > 0) pending.push(this.resetCheckpoints(resetIds));
    if (pending.length > 0) {
      await Promise.all(pending);
      // A revocation may have committed before the reset: that lease is gone after all.
      for (let i = 0; i < items.length; i++) {
        const item = items[i] as KeepaliveItem;
        if ('ttl' in item && this.store.lease(item.id) === null) items[i] = { id: item.id, error: 'lease_not_found' };
      }
    }
    if (revoking.length > 0 && this.options.bugs?.notFoundWhileRevoking !== true) await this.revocationsApplied(revoking);
    return { revision: this.store.revision, leases: items as KeepaliveItem[] };
  }

  /**
   * A lease whose revocation this leader proposed is answered lease_not_found only once that
   * revocation applied here: its keys are gone by then, so a read that follows the answer cannot
   * see them. Answered at the proposal, a revocation lost with a leadership change (fault run
   * seed 19105: a transfer attempt) left a lease reported dead whose key was still read 1 s later.
   * etcd's lessor waits for the revocation the same way. Not applied when its proposal settled:
   * unavailable, and the client retries (the tracker proposes it again after revokeRetryMs, or a
   * new leader decides).
   */
  private async revocationsApplied(ids: readonly number[]): Promise<void> {
    await Promise.all(ids.map((id) => this.revocations.get(id)));
    const alive = ids.filter((id) => this.store.lease(id) !== null);
    if (alive.length > 0) {
      throw new UnavailableError('a lease named is being revoked and its revocation has not committed yet; retry shortly', { leases: alive });
    }
  }

  /** The full TTL is promised only once a checkpoint of it is committed (see expiry-tracker.ts). */
  private resetCheckpoints(ids: readonly number[]): Promise<void> {
    const leases = ids.map((id) => ({ id, remainingMs: this.store.lease(id)?.ttlMs ?? 0 }));
    const done = this.proposeInternal({ type: 'leaseCheckpoint', leases }).then(
      () => undefined,
      (error: unknown) => {
        for (const id of ids) this.tracker.resetFailed(id);
        throw error;
      },
    );
    const settled = done.finally(() => {
      for (const id of ids) if (this.resets.get(id) === settled) this.resets.delete(id);
    });
    for (const id of ids) this.resets.set(id, settled);
    return settled;
  }

  async timeToLive(id: number, forwarded: boolean, origin: Origin, withKeys: boolean): Promise<LeaseInfo> {
    this.check(origin, () => [leaseAccess]);
    const info = await this.leaseInfo(id, forwarded);
    if (!withKeys) return { ...info, keys: [] };
    // The key list reveals keys (etcd's CVE-2023-32082): each must be readable by the caller.
    this.check(origin, () => leaseInfoAccesses(info.keys));
    return info;
  }

  private async leaseInfo(id: number, forwarded: boolean): Promise<LeaseInfo> {
    if (!this.driver.isLeader) {
      return await this.deps.forwarder.timeToLive(this.leaderToForwardTo(forwarded), id, this.options.requestTimeoutMs);
    }
    this.maybePromote();
    await this.whenPromoted();
    await this.confirmLeadership();
    this.requireServing();
    const lease = this.store.lease(id);
    if (lease === null) throw new LeaseNotFoundError(`lease ${id} not found`, { id });
    const remainingMs = this.tracker.remainingMs(id, this.monotonicMs()) ?? lease.remainingMs;
    // Where a namespace move brought it from: a mover copying it on tells it from another cell's lease of the same id.
    const leaseOrigin = this.store.leaseOrigin(id);
    return {
      id,
      ttl: Math.floor(remainingMs / 1000),
      ttlMs: Math.round(remainingMs),
      grantedTtl: lease.ttlMs / 1000,
      keys: this.store.keysOfLease(id),
      revision: this.store.revision,
      ...(leaseOrigin === null ? {} : { origin: leaseOrigin }),
    };
  }

  async list(request: { after: number; limit: number }, forwarded: boolean, origin: Origin): Promise<LeaseList> {
    this.check(origin, () => [leaseAccess]);
    if (!this.driver.isLeader) {
      return await this.deps.forwarder.list(this.leaderToForwardTo(forwarded), request, this.options.requestTimeoutMs);
    }
    this.maybePromote();
    await this.whenPromoted();
    await this.confirmLeadership();
    this.requireServing();
    // One more than asked tells whether another page follows.
    const page = this.store.leasesPage(request.after, request.limit + 1);
    const now = this.monotonicMs();
    const leases = page.slice(0, request.limit).map((lease) => {
      const remainingMs = this.tracker.remainingMs(lease.id, now) ?? lease.remainingMs;
      return { id: lease.id, ttl: Math.floor(remainingMs / 1000), grantedTtl: lease.ttlMs / 1000 };
    });
    return { revision: this.store.revision, leases, more: page.length > request.limit };
  }

  private check(origin: Origin, accesses: Parameters<AccessGuard['check']>[1]): void {
    if (origin !== undefined) this.deps.guard.check(origin, accesses); // undefined: cellWork
  }

  private requireServing(): void {
    if (!this.driver.isLeader || this.promotedTerm === 0) {
      throw new UnavailableError('leadership changed while answering; retry');
    }
  }

  /** The leader to pass a call on to. */
  private leaderToForwardTo(forwarded: boolean): MemberId {
    const leader = this.driver.leaderId;
    // A forwarded call that lands on a non-leader is not passed on again: no forwarding loops.
    if (forwarded || leader === 0 || leader === this.deps.memberId) {
      throw new UnavailableError('no leader to renew leases with; retry shortly', { leader });
    }
    return leader;
  }
}
