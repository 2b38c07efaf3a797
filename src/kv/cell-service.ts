// The cell as the API sees it: mutations become commands in the Raft log (with the Request-ID
// and the proposer's clock inside, so dedup is replicated state), linearizable reads wait for a
// ReadIndex confirmation, serializable reads are answered from local state and say so.
import { encodeTenants, isLeasesOnly, leasesOnlyImportBytesMax, parseImportRecord, restampImportRequests, type StoredPolicy } from '../mvcc/index.js';
import type { TenantRecord, TenantUsage } from '../base/tenants.js';
import { InvalidArgumentError, UnavailableError } from '../base/errors.js';
import { namespaceProblem, namespacesMax, ownSpans } from '../base/namespaces.js';
import { moveProtocol } from '../base/namespace-import.js';
import { readAccesses, type AccessGuard } from '../auth/index.js';
import {
  type Command,
  type Origin,
  type CommandProposer,
  type MvccStore,
  type Proposed,
  type RangeRequest as MvccRangeRequest,
  type RangeResult as MvccRangeResult,
  type TxnOp as MvccTxnOp,
} from '../mvcc/index.js';
import type { RaftStatus } from '../raft/index.js';
import type * as api from '../api/types.js';
import type { MemberInfo } from '../membership/member-directory.js';
import type { NodeMetrics } from '../metrics/node-metrics.js';
import { ReadGate } from './read-gate.js';
import type { RequestKind, TenantAdmission } from '../base/tenant-admission.js';
import type { FairAdmission, Work } from '../base/fair-admission.js';
import type { MemberView } from '../membership/membership.js';

/**
 * Expiry entries one page of a namespace's Request-ID records scans. A page is one turn of the
 * event loop (a get and a decode per entry), and a move's first listing reads every record of the
 * dedup window (10 minutes of writes). Move bench, 30 moves a build at ~1,000 writes/s: the
 * longest pause between acknowledged writes p50 126 / p90 218 ms with pages of 2,000 against
 * 204 / 309 ms with 20,000 (the mover's window itself no shorter: p50 133 against 103).
 */
const requestsPageScanMax = 2_000;

/** What the cell's status needs to know about membership (src/membership/membership.ts). */
export interface MembershipView {
  members(): MemberView[];
  readonly removed: boolean;
  isMember(): boolean;
}

/** What the KV service needs from the node's configuration. */
export interface CellServiceConfig {
  readonly cellId: string;
  readonly clusterId: string;
  readonly memberId: number;
  /** The static --initial-cluster list, shown when no membership view is given. */
  readonly members: readonly MemberInfo[];
  readonly requestTimeoutMs: number;
  /** What `baton snapshot restore` recorded in this member's data directory; absent or null: not restored. */
  readonly restoredFrom?: api.RestoreRecord | null;
  /** Members' etcd gRPC URLs by name, where known: shown in the status for routers. */
  readonly grpcUrls?: ReadonlyMap<string, string>;
}

/** What the KV service needs from the node's driver (NodeDriver). */
export interface CellDriver {
  status(): RaftStatus;
  regressed(): string | null;
  linearizableRead(): Promise<void>;
}

export class CellService implements api.CellApi, CommandProposer {
  readonly cellId: string;
  private readonly revisionWaiters = new Set<{ revision: number; resolve: () => void }>();

  constructor(
    private readonly config: CellServiceConfig,
    private readonly driver: CellDriver,
    /** The node's one write path (driver/command-proposer.ts). */
    private readonly proposer: CommandProposer,
    private readonly store: MvccStore,
    /** This member's authorization decisions (reads here; writes in the proposer and at apply). */
    private readonly guard: AccessGuard,
    private readonly metrics: NodeMetrics,
    /** Sheds reads (lists first) under overload, so keepalives are still answered. */
    private readonly readGate: ReadGate = new ReadGate(),
    /** Members from the committed configuration; absent: the static --initial-cluster list. */
    private readonly membership: MembershipView | null = null,
    /** Per-tenant rates and concurrency (#28), decided before a proposal or a ReadIndex; null: none. */
    private readonly admission: TenantAdmission | null = null,
    /** Fair queues per tenant (#28), after the tenant's quotas; null: off. Only in a cell with tenants. */
    private readonly fair: FairAdmission | null = null,
  ) {
    this.cellId = config.cellId;
  }

  revision(): number {
    return this.store.revision;
  }

  /** Called by the driver after every applied batch. */
  onApplied(): void {
    const revision = this.store.revision;
    for (const waiter of this.revisionWaiters) {
      if (waiter.revision <= revision) {
        this.revisionWaiters.delete(waiter);
        waiter.resolve();
      }
    }
  }

  /**
   * Refuses now a put its tenant could not admit (quota_exceeded), taking nothing (#28); one the
   * caller may not make is refused first (permission_denied), so a client without the right to
   * write a tenant's keys learns nothing of its quotas.
   */
  admitEarly(key: string, kind: RequestKind, principal: string): void {
    if (this.admission === null || !this.admission.active()) return;
    if (kind === 'write') {
      const denied = this.guard.command(principal, { type: 'put', key, value: new Uint8Array(0) });
      if (denied !== null) throw denied;
    }
    this.admission.precheck(key, kind);
    const full = this.fair?.refuseEarly({ flow: this.admission.flowOf([key]), kind }) ?? null;
    if (full !== null) throw full;
  }

  put(request: api.PutRequest, requestId: string | undefined, principal: string): Promise<api.PutResult> {
    const op = { type: 'put' as const, ...request };
    let entered;
    try {
      entered = this.enter([request.key], 'write', { kind: 'write' }, op, principal);
    } catch (error) {
      return Promise.reject(error);
    }
    if (entered instanceof Promise) return entered.then((release) => this.putAdmitted(op, requestId, principal, release));
    return this.putAdmitted(op, requestId, principal, entered);
  }

  private putAdmitted(op: Command & { type: 'put' }, requestId: string | undefined, principal: string, release: (() => void) | null): Promise<api.PutResult> {
    // The hot write: a .then instead of an async frame (one closure, one promise).
    return this.propose(op, requestId, principal).then(({ result }) => {
      release?.();
      return { created: result.created, version: result.version, revision: result.revision, fencingToken: result.fencingToken };
    }, (error: unknown) => {
      release?.();
      throw error;
    });
  }

  async deleteRange(request: api.DeleteRequest, requestId: string | undefined, principal: string): Promise<api.DeleteResult> {
    const op = { type: 'delete' as const, ...request };
    const entered = this.enter([request.key], 'write', { kind: 'write' }, op, principal);
    const release = entered instanceof Promise ? await entered : entered;
    try {
      const { result } = await this.propose(op, requestId, principal);
      return { deleted: result.deleted, revision: result.revision };
    } finally {
      release?.();
    }
  }

  async txn(request: api.TxnRequest, requestId: string | undefined, principal: string): Promise<api.TxnResult> {
    const toOp = (op: api.TxnOp): MvccTxnOp => {
      if ('put' in op) return { type: 'put', ...op.put };
      if ('get' in op) return { type: 'get', ...op.get };
      return { type: 'delete', ...op.delete };
    };
    const op = { type: 'txn' as const, compare: request.compare, success: request.success.map(toOp), failure: request.failure.map(toOp) };
    let release: (() => void) | null = null;
    if (this.tenanted()) {
      // Only a cell with tenants pays for the txn's keys and kind.
      const kind = txnKind(request);
      const ops = request.compare.length + request.success.length + request.failure.length;
      const entered = this.enter(txnKeys(request), kind, { kind, ops }, kind === 'write' ? op : null, principal);
      release = entered instanceof Promise ? await entered : entered;
    }
    let result;
    try {
      ({ result } = await this.propose(op, requestId, principal));
    } finally {
      release?.();
    }
    return {
      succeeded: result.succeeded,
      revision: result.revision,
      results: result.results.map((r) => {
        if (r.type === 'put') return { created: r.created, version: r.version, revision: r.revision, fencingToken: r.fencingToken };
        if (r.type === 'delete') return { deleted: r.deleted, revision: r.revision };
        return { revision: r.revision, count: r.count, more: r.more, kvs: r.kvs };
      }),
    };
  }

  async compact(revision: number, origin: Origin): Promise<{ revision: number; compactRevision: number }> {
    const { result } = await this.propose({ type: 'compact', revision }, undefined, origin);
    return { revision: result.revision, compactRevision: result.compactRevision };
  }

  async policyRecord(principal: string): Promise<StoredPolicy> {
    this.checkAdmin(principal);
    await this.driver.linearizableRead();
    return this.store.policyRecord();
  }

  async setPolicyRecord(record: Uint8Array, ifVersion: number, principal: string): Promise<{ version: number }> {
    const { result } = await this.propose({ type: 'policySet', record, ifVersion }, undefined, principal);
    return { version: result.version };
  }

  /** The tenant table and each tenant's use as applied here, linearizable (issue #28). */
  async tenants(principal: string): Promise<{ version: number; tenants: Array<TenantRecord & { usage: TenantUsage }> }> {
    this.checkAdmin(principal);
    await this.driver.linearizableRead();
    const { version, tenants } = this.store.tenantsRecord();
    return { version, tenants: tenants.map((t) => ({ ...t, usage: this.store.tenantUsage(t.name) })) };
  }

  /** Replaces the tenant table through the log if it is still at `ifVersion` (else 412). */
  async setTenants(tenants: readonly TenantRecord[], ifVersion: number, principal: string): Promise<{ version: number }> {
    this.checkAdmin(principal);
    const { result } = await this.propose({ type: 'tenantsSet', record: encodeTenants(tenants), ifVersion }, undefined, principal);
    return { version: result.version };
  }

  /** wrong_cell or cross_cell for a read of keys this cell does not own alone (docs/design/cells.md). */
  /**
   * A linearizable read is refused for a namespace fenced here (for a move), as a write is: from
   * the fence on the destination may land and take writes at any moment, and this cell would
   * answer without them (a stale read; the fault run across cells, seed 36: a write acknowledged
   * by the destination, then a read through a router not yet told of the flip answered here with
   * the value before it). Serializable reads are still served here; the mover's own read after
   * the fence (`fenced`, administration) too.
   */
  private checkOwned(request: api.RangeRequest, linearizable: boolean, fencedRead = false): void {
    const refused = this.store.refuseRead({ type: 'get', ...request }, linearizable && !fencedRead);
    if (refused !== null) throw refused;
  }

  /** Replaces the namespace-ownership table through the log (the control plane pushes it). */
  async setOwnership(record: Uint8Array, principal: string, requestsOf?: { prefix: string; sinceMs: number }): Promise<{
    epoch: number; revision: number; requests?: { id: string; record: string; stampMs: number }[] | null;
    /** A fence's: ms from its proposal to its apply here, and of the records' scan (the mover's window log). */
    appliedInMs?: number; requestsInMs?: number;
    /**
     * A fence's: the revision a watch of the namespace's prefix ends at here (wrong_cell), or null
     * (not fenced). The mover takes its feed's end as the fence only when it is this one: a member
     * replaying old tables can end the same watch at an older revision (cells.md).
     */
    watchFence?: number | null;
  }> {
    const proposedAt = performance.now();
    const { result } = await this.propose({ type: 'ownershipSet', record }, undefined, principal);
    if (requestsOf === undefined) return { epoch: result.epoch, revision: result.revision };
    const appliedAt = performance.now();
    // A move's fence: read right after it applied here, this member holds every Request-ID record
    // of the namespace (writes to it after the fence are refused and record none). null: too many
    // for one answer (the mover reads them in pages instead).
    const page = this.store.namespaceRequests(requestsOf.prefix, { sinceMs: requestsOf.sinceMs, after: null, scanMax: 20_000 });
    return {
      epoch: result.epoch, revision: result.revision,
      appliedInMs: Math.round(appliedAt - proposedAt), requestsInMs: Math.round(performance.now() - appliedAt),
      watchFence: this.store.watchBounds({ key: requestsOf.prefix, prefix: true }).fence?.revision ?? null,
      requests: page.next !== null ? null : page.requests.map(wireRequest),
    };
  }

  /** A move's import into this cell (src/mvcc/import-keys.ts), through the log. */
  async importKeys(received: Uint8Array, principal: string): Promise<{ imported: number; revision: number }> {
    // Request-ID records into this cell's dedup clock, before the log (every replica applies these bytes).
    const record = restampImportRequests(received, this.store.dedupClockMs());
    // Renewals carried to a moved namespace's leases are not shed by a slow leader (ProposeOptions).
    const urgent = record.byteLength <= leasesOnlyImportBytesMax && isLeasesOnly(parseImportRecord(record));
    const { result } = await this.propose({ type: 'importKeys', record }, undefined, principal, { urgent });
    return { imported: result.imported, revision: result.revision };
  }

  /**
   * A page of the dedup records of a namespace's requests (linearizable: after a fence applied
   * anywhere, every record of the namespace is in what this member reads). Administration.
   */
  async namespaceRequests(prefix: string, options: { sinceMs: number; after: Uint8Array | null }, principal: string): Promise<{
    requests: { id: string; record: string; stampMs: number; ageMs: number }[]; next: string | null;
  }> {
    this.guard.checkAdmin(principal);
    await this.driver.linearizableRead();
    const page = this.store.namespaceRequests(prefix, { ...options, scanMax: requestsPageScanMax });
    return {
      requests: page.requests.map(wireRequest),
      next: page.next === null ? null : Buffer.from(page.next).toString('base64'),
    };
  }

  /** The ownership table as applied here (linearizable), or null: never given one. */
  async ownership(principal: string): Promise<unknown> {
    this.checkClusterInfo(principal);
    await this.driver.linearizableRead();
    return this.store.ownership()?.table ?? null;
  }

  dedupClockMs(): number {
    return this.store.dedupClockMs();
  }

  readBarrier(): Promise<void> {
    return this.driver.linearizableRead();
  }

  localPolicyRecord(): StoredPolicy {
    return this.store.policyRecord();
  }

  checkAdmin(principal: string): void {
    this.guard.checkAdmin(principal);
  }

  checkClusterInfo(principal: string): void {
    this.guard.checkClusterInfo(principal);
  }

  async range(request: api.RangeRequest, options: api.ReadOptions, principal: string): Promise<api.RangeResult> {
    // Decided before the ReadIndex too (a denied read learns nothing, not even that there is no
    // leader), and again after it: the policy may have changed while the read waited.
    this.guard.check(principal, () => readAccesses(request));
    // A linearizable read is judged on ownership only after its ReadIndex (rangeAdmitted): before
    // it, a member behind its cell (cut off, or replaying its log after a restart) holds an older
    // table and would refuse for certain with wrong_cell naming the namespace's former owner, which
    // the mover took as the source's refusal and aborted a move (fault run across cells, seed 3).
    if (options.fenced === true || options.exclude !== undefined || options.page !== undefined) this.guard.checkAdmin(principal);
    // The ranges the read covers, once (a namespace's own keys with `exclude`, from a page's start; its argument errors before any wait).
    const owned = ownParts(request, options);
    const parts = pageParts(request, options, owned);
    if (options.consistency !== 'linearizable') for (const part of owned) this.checkOwned(part, false);
    const entered = this.tenanted() ? this.enter([request.key], 'read', this.rangeWork(request), null, principal) : null;
    const admitted = entered instanceof Promise ? await entered : entered;
    let release: () => void;
    try {
      release = this.readGate.enter(request.prefix === true || request.rangeEnd !== undefined);
    } catch (error) {
      // Shed by the read gate (overloaded): the tenant's slot is given back at once.
      admitted?.();
      throw error;
    }
    try {
      return await this.rangeAdmitted(request, parts, options, principal, owned);
    } finally {
      release();
      admitted?.();
    }
  }

  /** Whether the cell has tenants (admission applies); without, a request pays this check only. */
  private tenanted(): boolean {
    return this.admission !== null && this.admission.active();
  }

  /**
   * A request's admission in a cell with tenants (#28): a write is authorized first (the proposer
   * decides it again), so a client that may not write a tenant's keys cannot spend its tokens; then
   * the tenants' quotas (tokens, a concurrent slot), then its turn in the fair queues. Its release
   * (the seat and the slot), a promise of it while it waits its turn, or null without tenants.
   */
  private enter(
    keys: readonly string[], kind: RequestKind, work: Omit<Work, 'flow'>, op: Command | null, principal: string,
  ): (() => void) | Promise<() => void> | null {
    if (this.admission === null || !this.admission.active()) return null;
    if (op !== null) {
      const denied = this.guard.command(principal, op);
      if (denied !== null) throw denied;
    }
    const quota = this.admission.admit(keys, kind);
    if (this.fair === null) return quota;
    const seat = this.fair.admit({ ...work, flow: this.admission.flowOf(keys) });
    if (typeof seat === 'function') {
      return () => {
        seat();
        quota();
      };
    }
    return seat.then((taken) => () => {
      taken();
      quota();
    }, (error: unknown) => {
      quota();
      throw error;
    });
  }

  /**
   * A read's kind and cost (#28): a prefix or range read is a list and may return up to its limit,
   * or, under a tenant's prefix, at most the keys the tenant holds; unknown otherwise (the widest).
   */
  private rangeWork(request: api.RangeRequest): Omit<Work, 'flow'> {
    if (request.prefix !== true && request.rangeEnd === undefined) return { kind: 'read' };
    const limit = request.limit !== undefined && request.limit > 0 ? request.limit : Number.POSITIVE_INFINITY;
    const [tenant] = this.admission?.tenantsOf([request.key]) ?? [];
    const held = tenant === undefined ? Number.POSITIVE_INFINITY : this.store.tenantUsage(tenant.name).keys;
    const mayReturn = Math.min(limit, held);
    return Number.isFinite(mayReturn) ? { kind: 'list', mayReturn } : { kind: 'list' };
  }

  private async rangeAdmitted(
    request: api.RangeRequest, parts: readonly api.RangeRequest[], options: api.ReadOptions, principal: string, owned: readonly api.RangeRequest[] = parts,
  ): Promise<api.RangeResult> {
    if (options.consistency === 'linearizable') {
      const started = performance.now();
      await this.driver.linearizableRead();
      this.metrics.readSeconds.observe((performance.now() - started) / 1000);
    }
    // A member restarted on an older copy of its data would answer from the past as if current.
    const regressed = this.driver.regressed();
    if (regressed !== null) throw new UnavailableError(`this member's data went back in time (${regressed}): read from another member`);
    if (options.minRevision !== undefined) await this.waitForRevision(options.minRevision);
    this.guard.check(principal, () => readAccesses(request));
    // Again on the state read: a read must not answer for a namespace this cell gave up meanwhile.
    for (const part of owned) this.checkOwned(part, options.consistency === 'linearizable', options.fenced === true);
    // A page counts only its own keys (not the whole namespace behind it).
    const paged = options.page !== undefined ? { skipCount: true } : {};
    if (parts.length === 1) {
      const result = this.store.range({ type: 'get', ...(parts[0] as api.RangeRequest), ...paged });
      return { revision: result.revision, count: result.count, more: result.more, kvs: result.kvs };
    }
    // A namespace's own ranges, read back to back (no await between them: one state), the limit
    // counted across them.
    // (No part at all: a page past the namespace's last key.)
    const combined: { revision: number; count: number; more: boolean; kvs: api.RangeResult['kvs'][number][] } = { revision: this.store.revision, count: 0, more: false, kvs: [] };
    for (const part of parts) {
      const left = request.limit !== undefined && request.limit > 0 ? request.limit - combined.kvs.length : 0;
      if (request.limit !== undefined && request.limit > 0 && left <= 0) {
        if (options.page !== undefined) {
          // A page counts only its own keys: whether one more follows is enough.
          combined.more ||= this.store.range({ type: 'get', ...part, limit: 1, skipCount: true }).kvs.length > 0;
          continue;
        }
        const rest = this.store.range({ type: 'get', ...part, countOnly: true });
        combined.count += rest.count;
        combined.more ||= rest.count > 0;
        continue;
      }
      const result = this.store.range({ type: 'get', ...part, ...(left > 0 ? { limit: left, ...paged } : {}) });
      combined.revision = result.revision;
      combined.count += result.count;
      combined.more ||= result.more;
      combined.kvs.push(...result.kvs);
    }
    return combined;
  }

  /** A linearizable read of the MVCC store (not counted against the read gate: small, internal). */
  async linearizableRange(request: MvccRangeRequest): Promise<MvccRangeResult> {
    const started = performance.now();
    await this.driver.linearizableRead();
    this.metrics.readSeconds.observe((performance.now() - started) / 1000);
    return this.store.range(request);
  }

  localRange(request: MvccRangeRequest): MvccRangeResult {
    return this.store.range(request);
  }

  status(): api.ClusterStatus {
    const status = this.driver.status();
    const voters = new Set([...status.confState.voters, ...status.confState.votersOutgoing]);
    // Health is the leader's view (src/raft/contact.ts): every member reports the same, and one
    // that hears no leader vouches for no one, itself included.
    const inContact = new Set(status.inContact ?? []);
    // Replication progress is the leader's alone: a follower answers without it.
    const leading = status.role === 'leader';
    return {
      cell: this.config.cellId,
      clusterId: this.config.clusterId,
      member: this.config.memberId,
      leader: status.leader,
      term: status.term,
      commitIndex: status.commitIndex,
      appliedIndex: this.store.appliedIndex,
      revision: this.store.revision,
      compactRevision: this.store.compactRevision,
      epoch: this.store.epoch,
      storeFormat: this.store.storeFormat,
      moveProtocol,
      restoredFrom: this.config.restoredFrom ?? null,
      data: status.regressed !== null ? 'regressed' : status.recovering ? 'recovering' : 'ok',
      ...(status.regressed !== null ? { regressedBecause: status.regressed } : {}),
      members: (this.membership?.members() ?? this.config.members).map((member) => {
        return {
          id: member.id,
          name: member.name,
          peerUrl: member.peerUrl,
          clientUrl: member.clientUrl,
          ...grpcUrlOf(this.config.grpcUrls, member.name),
          role: voters.has(member.id) ? 'voter' : 'learner',
          healthy: inContact.has(member.id),
          ...(leading ? matchOf(status.progress.get(member.id)) : {}),
        };
      }),
    };
  }

  healthy(): boolean {
    return true;
  }

  ready(): { ready: boolean; reason: string } {
    const status = this.driver.status();
    if (this.membership?.removed === true) return { ready: false, reason: 'removed from the cell' };
    if (status.regressed !== null) return { ready: false, reason: `data went back in time: ${status.regressed}` };
    if (status.leader === 0) return { ready: false, reason: 'no leader' };
    // Until an entry of the current term commits, the commit index known here can lag what earlier
    // leaders committed (right after a restart): a serializable read could miss acknowledged writes.
    if (status.commitTerm !== status.term) {
      return { ready: false, reason: `waiting for the first commit of term ${status.term}` };
    }
    if (this.store.appliedIndex < status.commitIndex) {
      return { ready: false, reason: `applying (${this.store.appliedIndex}/${status.commitIndex})` };
    }
    return { ready: true, reason: 'ok' };
  }

  metricsText(): Promise<string> {
    return this.metrics.registry.render();
  }

  /** Any command through the log (locks and elections use the queue commands). */
  propose<C extends Command>(op: C, requestId: string | undefined, origin: Origin, options?: { readonly urgent?: boolean }): Promise<Proposed<C>> {
    return this.proposer.propose(op, requestId, origin, options);
  }

  /**
   * A lock or election step (#28). The client's own steps, entering a queue (`seqCreate`: an
   * acquire or a campaign) and leaving it (`seqRelease`: a release or a resign), are its tenant's
   * work: in a cell with tenants each waits for a small-level seat of its tenant's flow, kind
   * `lock`, held only while it is proposed, never while the contender waits for the lock. Releases
   * are queued too because a churning tenant's releases are half its log traffic: unqueued, they
   * crowd a loaded node as much as its acquires would. The contender's own steps (checks,
   * reclaims, withdrawals after a give-up) finish admitted work and pass at once.
   */
  proposeLockStep<C extends Command>(op: C, requestId: string | undefined, origin: Origin): Promise<Proposed<C>> {
    const command: Command = op;
    const clientStep = command.type === 'seqCreate' || command.type === 'seqRelease';
    if (!clientStep || this.fair === null || this.admission === null || !this.admission.active()) {
      return this.propose(op, requestId, origin);
    }
    const seat = this.fair.admit({ flow: this.admission.flowOf([command.prefix]), kind: 'lock' });
    const run = (release: () => void): Promise<Proposed<C>> => this.propose(op, requestId, origin).finally(release);
    return typeof seat === 'function' ? run(seat) : seat.then(run);
  }

  private waitForRevision(revision: number): Promise<void> {
    if (this.store.revision >= revision) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = { revision, resolve: () => { clearTimeout(timer); resolve(); } };
      const timer = setTimeout(() => {
        this.revisionWaiters.delete(waiter);
        reject(new UnavailableError(`revision ${revision} not applied here within ${this.config.requestTimeoutMs} ms`, {
          revision: this.store.revision,
        }));
      }, this.config.requestTimeoutMs);
      this.revisionWaiters.add(waiter);
    });
  }
}

/** Every key a txn names (compares and both branches): each owning tenant admits it. */
function txnKeys(request: api.TxnRequest): string[] {
  const keys = request.compare.map((c) => c.key);
  for (const op of [...request.success, ...request.failure]) {
    keys.push('put' in op ? op.put.key : 'get' in op ? op.get.key : op.delete.key);
  }
  return keys;
}

/** A txn that may write is a write; one of reads only is a read. */
function txnKind(request: api.TxnRequest): RequestKind {
  return [...request.success, ...request.failure].some((op) => !('get' in op)) ? 'write' : 'read';
}

/** A member's match index from the leader's progress, when the leader tracks one for it. */
function matchOf(progress: { readonly match: number } | undefined): { matchIndex?: number } {
  return progress === undefined ? {} : { matchIndex: progress.match };
}

/** A member's gRPC URL as a status field, absent when unknown (a member added without one). */
function grpcUrlOf(urls: ReadonlyMap<string, string> | undefined, name: string): { grpcUrl?: string } {
  const url = urls?.get(name);
  return url === undefined ? {} : { grpcUrl: url };
}

/**
 * The ranges a read covers: itself, or with `exclude` (a namespace's own keys, administration) the
 * namespace's range less its nested namespaces' (src/base/namespaces.ts ownSpans). Refused unless
 * the read is a prefix read of a namespace and every excluded prefix a namespace nested in it.
 */
function ownParts(request: api.RangeRequest, options: api.ReadOptions): api.RangeRequest[] {
  const exclude = options.exclude;
  if (exclude === undefined || exclude.length === 0) return [request];
  if (request.prefix !== true || namespaceProblem(request.key) !== null) {
    throw new InvalidArgumentError('exclude reads a namespace\'s own keys: the read must be a prefix read of a namespace (a prefix ending in /)');
  }
  if (exclude.length > namespacesMax) throw new InvalidArgumentError(`exclude names at most ${namespacesMax} namespaces`);
  for (const nested of exclude) {
    if (nested === request.key || !nested.startsWith(request.key) || namespaceProblem(nested) !== null) {
      throw new InvalidArgumentError(`exclude names namespaces nested in ${request.key}, not ${JSON.stringify(nested)}`);
    }
  }
  const { prefix: _prefix, ...rest } = request;
  return ownSpans(request.key, exclude).map((span) => ({ ...rest, key: span.start, rangeEnd: span.end as Uint8Array }));
}

/**
 * A page of a namespace's read (ReadOptions.page): its ranges from just after `after` on. Only a
 * prefix read of a namespace with a limit; `after` one of its keys' (or any key under it).
 */
function pageParts(request: api.RangeRequest, options: api.ReadOptions, parts: api.RangeRequest[]): api.RangeRequest[] {
  const page = options.page;
  if (page === undefined) return parts;
  if (request.prefix !== true || namespaceProblem(request.key) !== null || request.revision !== undefined && request.revision !== 0) {
    throw new InvalidArgumentError('paged reads a namespace\'s current keys a page at a time: the read must be a prefix read of a namespace (a prefix ending in /)');
  }
  if (request.limit === undefined || request.limit <= 0) throw new InvalidArgumentError('paged needs a limit (the keys of one page)');
  if (page.after === null) return parts;
  if (!page.after.startsWith(request.key)) throw new InvalidArgumentError(`after is a key under ${request.key}`);
  // The smallest key after `after` in byte order: `after` with a 0 byte appended.
  const from = Buffer.from(`${page.after}\u0000`, 'utf8');
  const spans = ownSpans(request.key, options.exclude ?? []);
  const { prefix: _prefix, ...rest } = request;
  return spans
    .filter((span) => span.end === null || Buffer.compare(Buffer.from(span.end), from) > 0)
    .map((span) => {
      const start = Buffer.compare(Buffer.from(span.start, 'utf8'), from) >= 0 ? span.start : from.toString('utf8');
      return { ...rest, key: start, rangeEnd: span.end as Uint8Array };
    });
}

/** A listed Request-ID record as the mover takes it (base64; its stamp and age on this cell's dedup clock). */
function wireRequest(r: { id: Uint8Array; record: Uint8Array; stampMs: number; ageMs: number }): { id: string; record: string; stampMs: number; ageMs: number } {
  return { id: Buffer.from(r.id).toString('base64'), record: Buffer.from(r.record).toString('base64'), stampMs: r.stampMs, ageMs: r.ageMs };
}
