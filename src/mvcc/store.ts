// The MVCC state machine: applies committed Raft entries in batches (one storage transaction per
// batch, the applied index written with the state it produced), answers reads, and produces and
// installs snapshots. Synchronous and deterministic: the same entries give the same bytes.
import { readPolicyRecord, type StoredPolicy } from './policy-record.js';
import { readTenantsRecord, type StoredTenants } from './tenants-record.js';
import { readTenantUsage, tenantsOf } from './tenant-usage.js';
import type { TenantRecord, TenantUsage } from '../base/tenants.js';
import { namespaceRequests, type NamespaceRequestPage } from './namespace-requests.js';
import { readOwnershipRecord, spansOfCommand, spansOfRead, type Ownership } from './ownership-record.js';
import { readNamespaceBounds, updateNamespaceFences, watchBoundsOf, type NamespaceBounds } from './namespace-bounds.js';
import { assert } from '../base/assert.js';
import { BatonError, CompactedError } from '../base/errors.js';
import { EntryType, type Entry } from '../raft/types.js';
import { applyCommand } from './apply-command.js';
import { countLiveKeys, type LiveKeyTally } from './live-keys.js';
import { checkRequestBytes, decodeCommandUnchecked } from './command-codec.js';
import { ContentHasher } from './content-hash.js';
import { contentForm } from './content-form.js';
import {
  DedupSources,
  dedupAdvanceClock,
  dedupLookup,
  dedupOldestMs,
  dedupPrune,
  dedupRecord,
  type StoredOutcome,
} from './dedup.js';
import { compactHistoryStep, oldestHistoryRevision } from './history-compactor.js';
import { metaKey, tablePrefix } from './layout.js';
import { applyMembersRecord, readMembersRecord } from './members-record.js';
import { leaseCount, leaseOrigin, readLease, readLeases, type LeaseRecord } from './lease-state.js';
import { readEvents, readLeaseKeys, readRange, type ReadContext } from './read.js';
import { decodeMeta, encodeMeta, initialMeta } from './records.js';
import { decodeSnapshot, encodeSnapshot } from './snapshot-stream.js';
import { restoreIntoNextEpoch } from './restore-epoch.js';
import { utf8 } from './bytes.js';
import { validateCount, validateRequestId } from './validate.js';
import {
  defaultMvccLimits,
  type ApplyOutcome,
  type CommandAuthorizer,
  type Command,
  type CommandEnvelope,
  type KvEngine,
  type KvEntry,
  type KvWriter,
  type MvccEvent,
  type MvccBugs,
  type MvccLimits,
  type MvccMeta,
  type RangeRequest,
  type RangeResult,
  type StoreFormat,
} from './types.js';

export interface MvccSnapshot {
  /** The view's applied index and term (read from the same view as the chunks). */
  readonly appliedIndex: number;
  readonly appliedTerm: number;
  /** It holds a read view open until consumed fully or closed. */
  readonly chunks: Iterable<Uint8Array>;
  /** Ends the read view without reading the rest (a no-op once the chunks were consumed). */
  close(): void;
}

export class MvccStore {
  private meta: MvccMeta;
  /**
   * A cache (not state) of the oldest dedup record's time, so most commands skip the prune scan.
   * Invariant: at or below the true oldest. null = unknown, undefined = no records.
   */
  private dedupOldestMs: number | undefined | null = null;
  /**
   * A cache (not state): whether history below `compactRevision` may remain. New events are
   * always above the compact revision, so only a new compact revision or a step can change it.
   */
  private compactionCache: { compactRevision: number; pending: boolean } | null = null;
  /**
   * A cache (not state) of the policy record, which the edges consult on every request: only a
   * policySet (applyCommand) and a restore write it, and both drop the cache.
   */
  private policyCache: StoredPolicy | null = null;
  /**
   * A cache (not state) of the ownership table, consulted for every keyed command at apply and
   * by the edges before proposing: undefined = not read yet, null = no table (owns every key).
   * An ownershipSet drops it before it applies; an aborted batch or a restore drops it too.
   */
  private ownershipCache: Ownership | null | undefined = undefined;
  /** A cache (not state) of the namespace bounds record (namespace-bounds.ts), dropped with the table's. */
  private boundsCache: NamespaceBounds | null = null;
  /**
   * A cache (not state) of the decoded tenant table, which every put and delete consults at apply
   * (#28): reading and decoding it per command cost ~8% of a put. undefined = not read yet. A
   * tenantsSet drops it after it applies; an aborted batch or a restore drops it too.
   */
  private tenantsCache: readonly TenantRecord[] | undefined = undefined;
  /**
   * Memory only (live-keys.ts): the live keys of the applied state, moved by each committed
   * batch's tally; null = not counted since the store opened or installed a snapshot (the next
   * ask scans once).
   */
  private liveKeyCount: number | null = null;

  constructor(
    private readonly engine: KvEngine,
    readonly limits: MvccLimits = defaultMvccLimits,
    /** Test-only broken rules (the simulator's teeth). */
    private readonly bugs: MvccBugs = {},
  ) {
    this.meta = loadMeta(engine);
  }

  /** Decides each client command against the state it applies on (src/auth); none: every command applies. */
  private authorize: CommandAuthorizer | null = null;

  /** Installs the authorization decision (the node does, before it applies anything). */
  setAuthorizer(authorize: CommandAuthorizer): void {
    this.authorize = authorize;
  }

  get appliedIndex(): number {
    return this.meta.appliedIndex;
  }
  get appliedTerm(): number {
    return this.meta.appliedTerm;
  }
  get revision(): number {
    return this.meta.revision;
  }
  get compactRevision(): number {
    return this.meta.compactRevision;
  }
  /** The fencing epoch its revisions live in (epoch.ts; 0 unless made by a restore). */
  get epoch(): number {
    return this.meta.epoch;
  }
  /** The format this store writes its records in (replicated: see StoreFormat). */
  get storeFormat(): StoreFormat {
    return this.meta.storeFormat;
  }

  /**
   * Applies committed entries in one storage transaction and returns each one's outcome, in
   * order. Entries at or below the applied index were applied before (a replay after a crash)
   * and are skipped; anything else must follow the applied index without a gap.
   */
  applyBatch(entries: readonly Entry[]): ApplyOutcome[] {
    const fresh = entries.filter((entry) => entry.index > this.meta.appliedIndex);
    if (fresh.length === 0) return [];
    let meta = this.meta;
    const liveKeys: LiveKeyTally = { delta: 0 };
    const outcomes = this.writeBatch((writer) => {
      const list: ApplyOutcome[] = [];
      const sources = new DedupSources(writer);
      for (const entry of fresh) {
        if (entry.index !== meta.appliedIndex + 1) assert(false, `apply gap: ${meta.appliedIndex} -> ${entry.index}`);
        assert(entry.term >= meta.appliedTerm, 'applied terms never decrease');
        const applied = this.applyEntry(writer, sources, meta, entry, liveKeys);
        list.push(applied.outcome);
        meta = { ...applied.meta, appliedIndex: entry.index, appliedTerm: entry.term };
        // Every entry, no-ops included, carries one bounded step of pending compaction.
        this.compactStep(writer, meta.compactRevision);
      }
      sources.flush();
      writer.put(metaKey, encodeMeta(meta));
      return list;
    });
    this.meta = meta;
    // Only a committed batch moves the count (an aborted one threw above and kept nothing).
    if (this.liveKeyCount !== null) this.liveKeyCount += liveKeys.delta;
    return outcomes;
  }

  private writeBatch<T>(body: (writer: KvWriter) => T): T {
    try {
      // If the batch aborts, the caches may describe writes that never happened.
      return this.engine.write(body);
    } catch (error) {
      this.dedupOldestMs = null;
      this.compactionCache = null;
      this.policyCache = null;
      this.ownershipCache = undefined;
      this.boundsCache = null;
      this.tenantsCache = undefined;
      throw error;
    }
  }

  private compactStep(writer: KvWriter, compactRevision: number): void {
    // The cache only saves the scan; whether a step runs depends on the stored history alone.
    let known = this.compactionCache;
    if (known === null || known.compactRevision !== compactRevision) {
      const oldest = oldestHistoryRevision(writer);
      known = { compactRevision, pending: oldest !== undefined && oldest < compactRevision };
    }
    if (known.pending) {
      compactHistoryStep(writer, { compactRevision, eventsMax: this.limits.compactEventsPerEntryMax });
      const oldest = oldestHistoryRevision(writer);
      known = { compactRevision, pending: oldest !== undefined && oldest < compactRevision };
    }
    this.compactionCache = known;
  }

  private pruneDedup(writer: KvWriter, clockMs: number): void {
    if (this.dedupOldestMs === null) this.dedupOldestMs = dedupOldestMs(writer);
    const oldest = this.dedupOldestMs;
    if (oldest === undefined || clockMs - oldest <= this.limits.dedupWindowMs) return;
    dedupPrune(writer, clockMs, this.limits);
    this.dedupOldestMs = dedupOldestMs(writer);
  }

  private applyEntry(
    writer: KvWriter,
    sources: DedupSources,
    meta: MvccMeta,
    entry: Entry,
    liveKeys: LiveKeyTally,
  ): { outcome: ApplyOutcome; meta: MvccMeta } {
    const base = { index: entry.index, term: entry.term };
    // Leader no-ops and membership changes advance the applied index only.
    if (entry.type === EntryType.config || entry.data.length === 0) {
      // ...and a membership change carries the member table (names, URLs) into the state.
      if (entry.type === EntryType.config) applyMembersRecord(writer, entry.data);
      return { outcome: { type: 'noop', ...base }, meta };
    }
    let envelope;
    try {
      envelope = decodeCommandUnchecked(entry.data);
      if (envelope.requestId !== undefined) validateRequestId(envelope.requestId, this.limits);
    } catch (error) {
      if (!(error instanceof BatonError)) throw error;
      const outcome = { type: 'failed', ...base, duplicate: false, requestId: null, error } as const;
      return { outcome, meta };
    }
    // A malformed entry (above) changes nothing, not even the dedup clock.
    if (envelope.op.type === 'upgradeStore') return this.applyUpgrade(writer, meta, envelope, base);
    const stamp = { source: envelope.source, atMs: envelope.proposedAtMs };
    const clockMs = dedupAdvanceClock(sources, meta.dedupClockMs, stamp, this.limits);
    let next: MvccMeta = { ...meta, dedupClockMs: clockMs };
    this.pruneDedup(writer, clockMs);
    const requestId = envelope.requestId ?? null;
    const requestIdBytes = requestId === null ? null : utf8(requestId);
    // The Request-ID first, then ownership: a retry of a request applied here before its namespace
    // was fenced or left gets its first outcome (its answer was lost, the write happened), not
    // wrong_cell; an identical retry only (another body with the ID: request_id_reused, as always).
    // Either way nothing is written, so members of older versions (ownership first) keep the same
    // state.
    if (requestIdBytes !== null && this.bugs.dedupOff !== true) {
      const earlier = dedupLookup(writer, { requestId: requestIdBytes, clockMs, op: envelope.op }, this.limits);
      if (earlier !== null) {
        return { outcome: toOutcome(earlier, { ...base, requestId, duplicate: true }), meta: next };
      }
    }
    // Judged at apply against the table of this position in the log: a refused request did not
    // happen here (nothing recorded), whatever the proposer checked earlier.
    const unowned = this.refuseUnowned(writer, envelope.op);
    if (unowned !== null) {
      return { outcome: { type: 'failed', ...base, duplicate: false, requestId, error: unowned }, meta: next };
    }
    let stored: StoredOutcome;
    try {
      checkRequestBytes(entry.data, this.limits);
      // Decided at apply, against the policy of this very state: a permission removed by an earlier
      // entry cannot be used by a later one, whatever the edge decided when it was proposed.
      const denied = this.authorize?.(envelope.principal, envelope.op, writer) ?? null;
      if (denied !== null) throw denied;
      if (envelope.op.type === 'policySet') this.policyCache = null;
      // (A move's landing import changes the table too.)
      const tableChange = envelope.op.type === 'ownershipSet' || envelope.op.type === 'importKeys';
      const before = tableChange ? readOwnershipRecord(writer) : null;
      if (tableChange) {
        this.ownershipCache = undefined;
        this.boundsCache = null;
      }
      // Imported Request-ID records may be older than the oldest one here (re-stamped to their
      // age): the cached oldest stamp is read again, as a restarted replica reads it, or replicas
      // prune them at different entries and their states differ (namespace-requests.test.ts).
      if (envelope.op.type === 'importKeys') this.dedupOldestMs = null;
      const tenants = (this.tenantsCache ??= tenantsOf(writer));
      let applied;
      try {
        applied = applyCommand(writer, { meta: next, limits: this.limits, bugs: this.bugs, tenants, liveKeys }, envelope.op);
      } finally {
        // Refused or not, the next command reads the table this state now holds.
        if (envelope.op.type === 'tenantsSet') this.tenantsCache = undefined;
      }
      next = applied.meta;
      // Where each namespace's history ends here (watches end at it): namespace-bounds.ts.
      if (tableChange) updateNamespaceFences(writer, { before, after: readOwnershipRecord(writer), revision: next.revision });
      stored = { ok: true, result: applied.result };
      if (envelope.op.type === 'ownershipSet') this.ownershipChange = { count: this.ownershipChange.count + 1, revision: next.revision };
    } catch (error) {
      if (!(error instanceof BatonError)) throw error;
      stored = { ok: false, error };
    }
    if (requestIdBytes !== null) {
      dedupRecord(writer, { requestId: requestIdBytes, clockMs, op: envelope.op }, stored, next.storeFormat);
      if (this.dedupOldestMs !== null) this.dedupOldestMs = Math.min(this.dedupOldestMs ?? Infinity, clockMs);
    }
    return { outcome: toOutcome(stored, { ...base, requestId, duplicate: false }), meta: next };
  }

  /**
   * An upgrade changes the store format and nothing else: older versions refuse it as malformed,
   * which changes nothing, so it moves no dedup clock and records no Request-ID either (members
   * of both versions keep one state even if it is proposed too early).
   */
  private applyUpgrade(
    writer: KvWriter,
    meta: MvccMeta,
    envelope: CommandEnvelope,
    base: { index: number; term: number },
  ): { outcome: ApplyOutcome; meta: MvccMeta } {
    const outcomeBase = { ...base, requestId: envelope.requestId ?? null, duplicate: false };
    try {
      const applied = applyCommand(writer, { meta, limits: this.limits }, envelope.op);
      return { outcome: { type: 'applied', ...outcomeBase, result: applied.result }, meta: applied.meta };
    } catch (error) {
      if (!(error instanceof BatonError)) throw error;
      return { outcome: { type: 'failed', ...outcomeBase, error }, meta };
    }
  }

  /** A read at the current revision or a retained past one (serializable: local state). */
  range(request: RangeRequest): RangeResult {
    const revision = request.revision ?? 0;
    if (revision !== 0 && revision < this.meta.revision) this.checkHistoryFloor(request, revision);
    return readRange(this.readContext(), request, false);
  }

  /**
   * A past read of a namespace that landed here at `floor`: below it, its state was the source's
   * (its history is there, none of it here: imports write no events), so compacted, as for a
   * watch. At or above it the imported records are the namespace's state (the source took no
   * write after its fence), which is what a past read finds.
   */
  private checkHistoryFloor(request: RangeRequest, revision: number): void {
    const ownership = this.ownership();
    if (ownership === null) return;
    const bounds = (this.boundsCache ??= readNamespaceBounds(this.engine));
    const { floor } = watchBoundsOf(bounds, ownership, request);
    if (revision < floor) throw new CompactedError(floor, `the history below revision ${floor} of a namespace that moved here is on the cell it came from`);
  }

  /** Events at or after `startRevision`, in order (watch catch-up). */
  events(options: { startRevision: number; limit: number }): MvccEvent[] {
    return readEvents(this.readContext(), options);
  }

  /** Dedup records of a namespace's requests, a page at a time (src/mvcc/namespace-requests.ts). */
  namespaceRequests(prefix: string, options: { sinceMs: number; after: Uint8Array | null; scanMax: number }): NamespaceRequestPage {
    return namespaceRequests(this.engine, prefix, { ...options, clockMs: this.meta.dedupClockMs });
  }

  /** The dedup clock as applied here (replicated state; src/mvcc/dedup.ts). */
  dedupClockMs(): number {
    return this.meta.dedupClockMs;
  }

  keysOfLease(lease: number): string[] {
    validateCount(lease, 'lease');
    return readLeaseKeys(this.engine, lease);
  }

  /** A lease as replicated (its remaining TTL as last checkpointed), or null. */
  lease(id: number): LeaseRecord | null {
    validateCount(id, 'lease');
    return readLease(this.engine, id);
  }

  /** The cell that granted lease `id` when a namespace move brought it here; null when granted here. */
  leaseOrigin(id: number): string | null {
    validateCount(id, 'lease');
    return leaseOrigin(this.engine, id);
  }

  /** Every lease, ascending by id: a new leader's expiry tracker starts from these. */
  leases(): LeaseRecord[] {
    return [...readLeases(this.engine)];
  }

  /** At most `limit` leases with ids above `afterId`, ascending (a bounded page of the list). */
  leasesPage(afterId: number, limit: number): LeaseRecord[] {
    validateCount(afterId, 'afterId');
    const out: LeaseRecord[] = [];
    if (afterId >= Number.MAX_SAFE_INTEGER) return out;
    for (const lease of readLeases(this.engine, afterId)) {
      if (out.length >= limit) break;
      out.push(lease);
    }
    return out;
  }

  /** The member table of the last membership change (JSON text), or null before any. */
  membersRecord(): string | null {
    return readMembersRecord(this.engine);
  }

  /**
   * Memory only: how many ownershipSets this process applied and the revision the latest applied
   * at (the same on every member: it moves no revision). Open watches of a namespace that was
   * just fenced or moved away end there (src/api/stream/watch-service.ts).
   */
  private ownershipChange = { count: 0, revision: 0 };

  lastOwnershipChange(): { count: number; revision: number } {
    return this.ownershipChange;
  }

  /**
   * For a watch of `spec` (docs/design/cells.md "How revisions map"): `fence`, when this cell no
   * longer takes writes for its keys, the revision its history of them ends at (wrong_cell there,
   * with the refusal); `floor`, the revision at or below which this cell does not hold their
   * history since they landed here (0: none).
   */
  watchBounds(spec: { key: string; prefix: boolean }): { fence: { error: BatonError; revision: number } | null; floor: number } {
    const ownership = this.ownership();
    if (ownership === null) return { fence: null, floor: 0 };
    const bounds = (this.boundsCache ??= readNamespaceBounds(this.engine));
    const found = watchBoundsOf(bounds, ownership, spec);
    const error = this.refuseCommand({ type: 'delete', key: spec.key, prefix: spec.prefix });
    if (error === null) return { fence: null, floor: found.floor };
    // A table applied before this build kept no fence: the revision now is the closest known.
    return { fence: { error, revision: found.fence ?? this.meta.revision }, floor: found.floor };
  }

  /** The namespace-ownership table as applied here; null: never given one (owns every key). */
  ownership(): Ownership | null {
    if (this.ownershipCache === undefined) this.ownershipCache = readOwnershipRecord(this.engine);
    return this.ownershipCache;
  }

  /**
   * wrong_cell or cross_cell for a command naming keys this cell does not own alone; else null.
   * With its Request-ID: null also when this cell holds a record of that ID (a retry of a request
   * applied here before its namespace left): apply answers it from the record, as it decides
   * ownership after the lookup (an entry spent on such a retry only).
   */
  refuseCommand(op: Command, requestId?: string): BatonError | null {
    const ownership = this.ownership();
    const refused = ownership === null ? null : ownership.refuse(spansOfCommand(op), true);
    if (refused === null || requestId === undefined || !this.holdsRecordOf(requestId, op)) return refused;
    return null;
  }

  /** The same for a read; a linearizable one is refused for a fenced namespace too (cell-service.ts). */
  refuseRead(request: RangeRequest, linearizable = false): BatonError | null {
    const ownership = this.ownership();
    return ownership === null ? null : ownership.refuse(spansOfRead(request), linearizable);
  }

  /**
   * Whether apply would answer `op` with `requestId` from its record (or as request_id_reused), at
   * the dedup clock applied here.
   */
  private holdsRecordOf(requestId: string, op: Command): boolean {
    if (this.bugs.dedupOff === true) return false;
    let requestIdBytes: Uint8Array;
    try {
      requestIdBytes = validateRequestId(requestId, this.limits);
    } catch (error) {
      if (!(error instanceof BatonError)) throw error;
      return false; // the proposer refuses it anyway; ownership is its first answer, as before
    }
    const clockMs = this.meta.dedupClockMs;
    return dedupLookup(this.engine, { requestId: requestIdBytes, clockMs, op }, this.limits) !== null;
  }

  private refuseUnowned(writer: KvWriter, op: Command): BatonError | null {
    // Inside the batch the cache is refreshed from the writer, which holds earlier entries' writes.
    if (this.ownershipCache === undefined) this.ownershipCache = readOwnershipRecord(writer);
    const ownership = this.ownershipCache;
    return ownership === null ? null : ownership.refuse(spansOfCommand(op), true);
  }

  /** The authorization policy record as applied here, and its version (0: never set). */
  /** The tenant table and its version (issue #28); read from the engine each time (small, rare). */
  tenantsRecord(): StoredTenants {
    return readTenantsRecord(this.engine);
  }

  /**
   * The tenant table as applied here, decoded once per change (#28): the edges' admission reads
   * it per request. The same array until the table changes, so callers may compare identities.
   */
  tenantTable(): readonly TenantRecord[] {
    return (this.tenantsCache ??= tenantsOf(this.engine));
  }

  /** A tenant's stored use (keys, value bytes, leases) as applied here (#28). */
  tenantUsage(name: string): TenantUsage {
    return readTenantUsage(this.engine, name);
  }

  policyRecord(): StoredPolicy {
    return (this.policyCache ??= readPolicyRecord(this.engine));
  }

  leaseCount(): number {
    return leaseCount(this.engine);
  }

  /** Live keys of the applied state (etcd_debugging_mvcc_keys_total): exact, see live-keys.ts. */
  liveKeys(): number {
    return (this.liveKeyCount ??= countLiveKeys(this.engine));
  }

  /** Whether history below the compact revision is still being deleted (a step per entry). */
  compactionPending(): boolean {
    const oldest = oldestHistoryRevision(this.engine);
    return oldest !== undefined && oldest < this.meta.compactRevision;
  }

  /** Whether `requestId` has a recorded outcome still inside the window at the current dedup clock. */
  hasRequest(requestId: string): boolean {
    const requestIdBytes = validateRequestId(requestId, this.limits);
    const clockMs = this.meta.dedupClockMs;
    return dedupLookup(this.engine, { requestId: requestIdBytes, clockMs }, this.limits) !== null;
  }

  /**
   * Content hash of the logical state: every key, all retained history, indexes, the dedup table,
   * revision and compact revision; the applied index and term only when asked. Records count in
   * one form whatever store format wrote them (content-form.ts); the format itself does not count.
   */
  hash(options: { includeAppliedIndex?: boolean } = {}): string {
    const hasher = new ContentHasher();
    let meta: MvccMeta = initialMeta;
    for (const entry of this.engine.snapshotEntries()) {
      if (entry.key.length === 1 && entry.key[0] === metaKey[0]) {
        meta = decodeMeta(entry.value);
        continue;
      }
      hasher.updateField(entry.key).updateField(contentForm(entry));
    }
    hasher.updateNumber(meta.revision).updateNumber(meta.compactRevision);
    hasher.updateNumber(meta.dedupClockMs);
    // Epoch 0 hashes as before epochs existed.
    if (meta.epoch !== 0) hasher.updateNumber(meta.epoch);
    if (options.includeAppliedIndex === true) {
      hasher.updateNumber(meta.appliedIndex).updateNumber(meta.appliedTerm);
    }
    return hasher.digest();
  }

  /** A consistent stream of the whole store at its applied index, in bounded chunks. */
  snapshot(options: { chunkBytesMax?: number } = {}): MvccSnapshot {
    const entries = this.engine.snapshotEntries()[Symbol.iterator]();
    // The first entry opens the view and is the meta record (0x01 sorts first).
    const first = entries.next();
    const meta = first.done === true ? initialMeta : readMetaEntry(first.value);
    const all: Iterable<KvEntry> = {
      *[Symbol.iterator]() {
        try {
          if (first.done !== true) yield first.value;
          for (let next = entries.next(); next.done !== true; next = entries.next()) yield next.value;
        } finally {
          entries.return?.();
        }
      },
    };
    const chunks = encodeSnapshot(all, options.chunkBytesMax ?? 1024 * 1024);
    // The view opened with the first entry: an unstarted `all` would never reach its finally.
    const close = (): void => void entries.return?.();
    return { appliedIndex: meta.appliedIndex, appliedTerm: meta.appliedTerm, chunks, close };
  }

  /** Replaces the whole store with a snapshot stream, atomically (all or nothing). */
  restore(chunks: Iterable<Uint8Array>): void {
    this.liveKeyCount = null;
    this.dedupOldestMs = null;
    this.compactionCache = null;
    this.policyCache = null;
    this.ownershipCache = undefined;
    this.boundsCache = null;
    this.tenantsCache = undefined;
    this.engine.replaceAll(decodeSnapshot(chunks));
    this.meta = loadMeta(this.engine);
  }

  /**
   * Replaces the whole store with a backup carried into the next fencing epoch (restore-epoch.ts),
   * atomically; returns the backup's meta and the new one. Damage in the stream aborts it all.
   */
  restoreNextEpoch(chunks: Iterable<Uint8Array>, options: { leaseGraceMs: number }): { old: MvccMeta; restored: MvccMeta; keys: number } {
    let metas: { old: MvccMeta; restored: MvccMeta } | null = null;
    let keys = 0;
    this.liveKeyCount = null;
    this.dedupOldestMs = null;
    this.compactionCache = null;
    this.policyCache = null;
    this.ownershipCache = undefined;
    this.boundsCache = null;
    this.tenantsCache = undefined;
    const onMeta = (old: MvccMeta, restored: MvccMeta): void => {
      metas = { old, restored };
    };
    const restored = restoreIntoNextEpoch(decodeSnapshot(chunks), { ...options, onMeta });
    const current = tablePrefix.current[0] as number;
    // The live keys counted on the way in: a count after would read every key again.
    this.engine.replaceAll((function* counted() {
      for (const entry of restored) {
        if (entry.key[0] === current) keys++;
        yield entry;
      }
    })());
    this.meta = loadMeta(this.engine);
    assert(metas !== null, 'the restore read the backup meta');
    return { ...(metas as { old: MvccMeta; restored: MvccMeta }), keys };
  }

  private readContext(): ReadContext {
    return { reader: this.engine, meta: this.meta, limits: this.limits };
  }
}

function loadMeta(engine: KvEngine): MvccMeta {
  const stored = engine.get(metaKey);
  return stored === undefined ? initialMeta : decodeMeta(stored);
}

function readMetaEntry(entry: KvEntry): MvccMeta {
  assert(entry.key.length === 1 && entry.key[0] === metaKey[0], 'a snapshot starts with meta');
  return decodeMeta(entry.value);
}

function toOutcome(
  stored: StoredOutcome,
  base: { index: number; term: number; requestId: string | null; duplicate: boolean },
): ApplyOutcome {
  return stored.ok
    ? { type: 'applied', ...base, result: stored.result }
    : { type: 'failed', ...base, error: stored.error };
}
