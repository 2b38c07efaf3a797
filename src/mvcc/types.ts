// The MVCC state machine's vocabulary: the ordered byte store it runs on (KvEngine), the
// commands that reach it through the Raft log, and the answers it gives (shaped like api.md).
import type { BatonError } from '../base/errors.js';
import * as limits from '../base/limits.js';

// ---------------------------------------------------------------------------------------------
// The engine: a small synchronous ordered byte store. LMDB implements it in src/storage; an
// in-memory one (memory-engine.ts) serves the simulator and fast tests.

export interface KvEntry {
  readonly key: Uint8Array;
  readonly value: Uint8Array;
}

/** Keys in [start, end), ascending by unsigned byte order (descending with `reverse`). */
export interface KvRange {
  readonly start: Uint8Array;
  readonly end: Uint8Array;
  /**
   * Descending: the engine seeks to the last key below `end` and steps back, so the first entry
   * costs the same as a forward seek (the key just below another, a queue's predecessor).
   */
  readonly reverse?: boolean;
}

/** Keys are never empty (LMDB refuses them); the store's keys always start with a table byte. */
export interface KvReader {
  get(key: Uint8Array): Uint8Array | undefined;
  /**
   * Ascending (descending if `range.reverse`), starting with a seek, never a scan from the first
   * key. The caller consumes the iterable (or stops it) before writing: no writes while iterating.
   */
  range(range: KvRange): Iterable<KvEntry>;
  /**
   * How many keys [start, end) holds (`reverse` aside), without reading their values: a read's
   * `count` covers its whole range while only `limit` keys are decoded. Optional: readers without
   * it (a write transaction's) are counted by iterating.
   */
  count?(range: KvRange): number;
}

export interface KvWriter extends KvReader {
  /** Copies key and value before it returns: callers may reuse their buffers right after. */
  put(key: Uint8Array, value: Uint8Array): void;
  delete(key: Uint8Array): void;
}

export interface KvEngine extends KvReader {
  /**
   * Runs `body` in one atomic write transaction: reads inside see the writes made so far; if
   * `body` throws, nothing of it is kept. A durable engine has committed to disk on return.
   */
  write<T>(body: (writer: KvWriter) => T): T;
  /** Every entry, ascending, from one consistent view taken when iteration starts. */
  snapshotEntries(): Iterable<KvEntry>;
  /** Atomically replaces every entry; if `entries` throws, the old content stays. */
  replaceAll(entries: Iterable<KvEntry>): void;
}

// ---------------------------------------------------------------------------------------------
// Data model.

export interface KeyValue {
  readonly key: string;
  /** Empty when the read asked for keysOnly. */
  readonly value: Uint8Array;
  /** 1 on create, +1 per update; a delete-then-create starts again at 1. */
  readonly version: number;
  /** Also the key's fencing token: it changes only when the key is created anew. */
  readonly createRevision: number;
  readonly modRevision: number;
  /** 0 = no lease. */
  readonly lease: number;
}

export interface MvccEvent {
  readonly type: 'put' | 'delete';
  readonly revision: number;
  /** For a delete: the key, an empty value, version 0 and modRevision = the delete's revision. */
  readonly kv: KeyValue;
  readonly prevKv: KeyValue | null;
}

// ---------------------------------------------------------------------------------------------
// Commands (what travels in the Raft log) and reads.

export interface PutOp {
  readonly type: 'put';
  readonly key: string;
  readonly value: Uint8Array;
  readonly lease?: number;
  /** The key's version must equal this; 0 = create only if absent. Not allowed inside a txn. */
  readonly ifVersion?: number;
  /** The key's modRevision must equal this. Not allowed inside a txn. */
  readonly ifRevision?: number;
}

export interface DeleteOp {
  readonly type: 'delete';
  readonly key: string;
  readonly prefix?: boolean;
  readonly ifVersion?: number;
  readonly ifRevision?: number;
}

export interface RangeRequest {
  readonly type: 'get';
  readonly key: string;
  readonly prefix?: boolean;
  /**
   * The keys in [key, rangeEnd), compared as UTF-8 bytes: a bound, so any bytes (at most
   * keyBytesMax + 1 of them); `0x30` ('0', just past '/') reads every key from `key` on. Not with
   * `prefix`, and not inside a txn (its gets read one key or a prefix).
   */
  readonly rangeEnd?: Uint8Array;
  /** 0 or absent = no limit. */
  readonly limit?: number;
  readonly keysOnly?: boolean;
  readonly countOnly?: boolean;
  /** 0 or absent = the current revision. Not allowed inside a txn. */
  readonly revision?: number;
  /**
   * Internal (never parsed from a client): with `limit`, read only the first keys of a current
   * range, not the whole range to count it; `count` is then the keys returned and `more` whether
   * another follows. A queue's first key (the lock holder) is one seek however long the queue.
   */
  readonly skipCount?: boolean;
}

export const compareTargets = ['version', 'createRevision', 'modRevision', 'value', 'lease'] as const;
export type CompareTarget = (typeof compareTargets)[number];
export const compareOperators = ['==', '!=', '<', '>'] as const;
export type CompareOperator = (typeof compareOperators)[number];

export interface Compare {
  readonly key: string;
  readonly target: CompareTarget;
  readonly op: CompareOperator;
  /** A Uint8Array for target `value`, a number otherwise. */
  readonly value: number | Uint8Array;
}

export type TxnOp = PutOp | RangeRequest | DeleteOp;

export interface TxnRequest {
  readonly type: 'txn';
  readonly compare: readonly Compare[];
  readonly success: readonly TxnOp[];
  readonly failure: readonly TxnOp[];
}

export interface CompactOp {
  readonly type: 'compact';
  readonly revision: number;
}

/** Deletes every key attached to `lease`, as one revision (a lease revoke or expiry). */
export interface DeleteLeaseKeysOp {
  readonly type: 'deleteLeaseKeys';
  readonly lease: number;
}

/** Grants a lease; `id` absent = the next free id (chosen by the state machine). */
export interface LeaseGrantOp {
  readonly type: 'leaseGrant';
  readonly ttlMs: number;
  readonly id?: number;
}

/**
 * Grants many leases in one log entry (op 19, store format 3): all or none. Each grant without an
 * `id` takes the next free id at apply, in order, so every member assigns the same ids.
 */
export interface LeaseGrantBatchOp {
  readonly type: 'leaseGrantBatch';
  readonly grants: readonly { readonly ttlMs: number; readonly id?: number }[];
}

/** Revokes a lease (a client's DELETE or the leader's expiry): its keys go in one revision. */
export interface LeaseRevokeOp {
  readonly type: 'leaseRevoke';
  readonly id: number;
}

/**
 * Revokes many leases in one log entry (op 21, store format 4): the leader's expiry of leases
 * whose deadline passed. Each lease present is revoked as leaseRevoke does (its keys in one
 * revision of its own, in the op's order); one already gone is skipped, not an error (a client
 * or an earlier entry revoked it first).
 */
export interface LeaseRevokeBatchOp {
  readonly type: 'leaseRevokeBatch';
  readonly ids: readonly number[];
}

/** Records remaining TTLs for the next leader; changes no revision. */
export interface LeaseCheckpointOp {
  readonly type: 'leaseCheckpoint';
  readonly leases: readonly { readonly id: number; readonly remainingMs: number }[];
}

/**
 * Creates `{prefix}{its own revision, 12 digits}` attached to `lease`: one contender's queue entry
 * for a lock or election. The lowest key under the prefix owns. With `ifEmpty` (try-lock), an
 * occupied queue fails with lock_held and writes nothing.
 */
export interface SeqCreateOp {
  readonly type: 'seqCreate';
  readonly prefix: string;
  readonly value: Uint8Array;
  readonly lease: number;
  readonly ifEmpty: boolean;
}

/**
 * A contender's place in its queue, decided in a committed step (no write): granted when `key`
 * is the lowest. Its key gone means its lease ended (lease_not_found) or it was deleted
 * (lock_not_held): a grant can never go to a dead lease.
 */
export interface SeqCheckOp {
  readonly type: 'seqCheck';
  readonly prefix: string;
  readonly key: string;
  readonly lease: number;
}

/** Deletes `key` only if it owns its queue (the lowest under `prefix`); else lock_not_held. */
export interface SeqReleaseOp {
  readonly type: 'seqRelease';
  readonly prefix: string;
  readonly key: string;
}

/**
 * Moves the store to a newer store format (StoreFormat): every member writes it from this entry
 * on, so the same log still gives the same bytes. Older versions refuse the entry as malformed
 * and change nothing: propose it only once every member runs a version that writes the format.
 */
export interface UpgradeStoreOp {
  readonly type: 'upgradeStore';
  readonly storeFormat: number;
}

/**
 * Replaces the cell's authorization policy record (src/auth defines its JSON; opaque here) if its
 * version is still `ifVersion`: policy changes are serialized through the log like every write,
 * and a change made from a stale read fails instead of undoing another.
 */
export interface PolicySetOp {
  readonly type: 'policySet';
  readonly record: Uint8Array;
  readonly ifVersion: number;
}

/**
 * Replaces the cell's namespace-ownership table (ownership-record.ts: the control plane's cell
 * map cut for this cell, JSON) when its epoch is newer than the stored one: ownership changes go
 * through the log, so every later entry is judged against them (docs/design/cells.md).
 */
export interface OwnershipSetOp {
  readonly type: 'ownershipSet';
  readonly record: Uint8Array;
}

/**
 * Replaces the cell's tenant table (tenants-record.ts, JSON) if its version is still `ifVersion`
 * (issue #28): tenant changes go through the log, so every member judges quotas the same way.
 */
export interface TenantsSetOp {
  readonly type: 'tenantsSet';
  readonly record: Uint8Array;
  readonly ifVersion: number;
}

/**
 * Move steps 2-6 on a destination cell (import-keys.ts): writes a namespace's keys as its source
 * holds them and raises this cell's revision to a floor. Proposed only by the control plane.
 */
export interface ImportKeysOp {
  readonly type: 'importKeys';
  readonly record: Uint8Array;
}

export type Command =
  | ImportKeysOp
  | TenantsSetOp
  | OwnershipSetOp
  | PutOp
  | DeleteOp
  | TxnRequest
  | CompactOp
  | DeleteLeaseKeysOp
  | LeaseGrantOp
  | LeaseGrantBatchOp
  | LeaseRevokeOp
  | LeaseRevokeBatchOp
  | LeaseCheckpointOp
  | SeqCreateOp
  | SeqCheckOp
  | SeqReleaseOp
  | UpgradeStoreOp
  | PolicySetOp;
export type CommandType = Command['type'];

/**
 * Whether a command from `principal` ('' anonymous, undefined the cell's own work) may apply,
 * decided on the state it applies on; an error (permission_denied) refuses it. src/auth implements it.
 */
export type CommandAuthorizer = (principal: string | undefined, op: Command, state: KvReader) => BatonError | null;

/** What a Raft entry's data carries. */
export interface CommandEnvelope {
  /** Opaque, ≤ 128 UTF-8 bytes; a retry with the same id returns the first outcome. */
  readonly requestId?: string;
  /** The proposer's wall clock (epoch ms) when it proposed the entry. */
  readonly proposedAtMs: number;
  /**
   * The proposing member's id. The dedup clock advances by each member's own clock *steps*
   * (differences between its consecutive stamps, clamped), so a member whose clock is off by any
   * amount cannot move the window; entries without it (older versions) only start the clock.
   */
  readonly source?: number;
  /**
   * The principal the request came from (docs/design/authorization.md): '' anonymous, absent for
   * the cell's own work (lease expiry, checkpoints, auto compaction) and entries of older versions.
   */
  readonly principal?: string;
  /**
   * The client's source address ("IP:port") as the proposing member saw it, for the audit log's
   * records (written only when the proposer has an audit log); absent in the cell's own work.
   */
  readonly address?: string;
  readonly op: Command;
}

// ---------------------------------------------------------------------------------------------
// Answers.

export interface PutResult {
  readonly type: 'put';
  readonly created: boolean;
  readonly version: number;
  readonly revision: number;
  readonly fencingToken: number;
}

export interface DeleteResult {
  readonly type: 'delete';
  readonly deleted: number;
  readonly revision: number;
}

export interface RangeResult {
  readonly type: 'get';
  readonly revision: number;
  readonly count: number;
  readonly more: boolean;
  readonly kvs: readonly KeyValue[];
}

export type TxnOpResult = PutResult | DeleteResult | RangeResult;

export interface TxnResult {
  readonly type: 'txn';
  readonly succeeded: boolean;
  readonly revision: number;
  readonly results: readonly TxnOpResult[];
}

export interface CompactResult {
  readonly type: 'compact';
  readonly revision: number;
  readonly compactRevision: number;
}

export interface DeleteLeaseKeysResult {
  readonly type: 'deleteLeaseKeys';
  readonly deleted: number;
  readonly revision: number;
}

export interface LeaseGrantResult {
  readonly type: 'leaseGrant';
  readonly id: number;
  readonly ttlMs: number;
  readonly revision: number;
}

export interface LeaseGrantBatchResult {
  readonly type: 'leaseGrantBatch';
  /** In the order of the op's grants. */
  readonly leases: readonly { readonly id: number; readonly ttlMs: number }[];
  readonly revision: number;
}

export interface LeaseRevokeResult {
  readonly type: 'leaseRevoke';
  readonly id: number;
  readonly deleted: number;
  readonly revision: number;
}

export interface LeaseRevokeBatchResult {
  readonly type: 'leaseRevokeBatch';
  /** The leases this entry revoked, in the op's order, each with its keys deleted (at its own revision). */
  readonly leases: readonly { readonly id: number; readonly deleted: number; readonly revision: number }[];
  /** The revision after the entry. */
  readonly revision: number;
}

export interface LeaseCheckpointResult {
  readonly type: 'leaseCheckpoint';
  readonly updated: number;
  readonly revision: number;
}

/** Where a contender stands, read in the same step as its command. */
export interface SeqPosition {
  /** The cell revision the position was read at (the command's own revision for a create). */
  readonly revision: number;
  readonly kv: KeyValue;
  /** The queue's owner: the lowest key (equal to `kv` when granted). */
  readonly owner: KeyValue;
  /** The key just below `kv`, or null when `kv` owns. */
  readonly predecessor: KeyValue | null;
}

export interface SeqCreateResult extends SeqPosition {
  readonly type: 'seqCreate';
}

export interface SeqCheckResult extends SeqPosition {
  readonly type: 'seqCheck';
}

export interface SeqReleaseResult {
  readonly type: 'seqRelease';
  readonly revision: number;
}

/** The format the store writes after the command (an upgrade to its own format changes nothing). */
export interface UpgradeStoreResult {
  readonly type: 'upgradeStore';
  readonly storeFormat: StoreFormat;
  readonly revision: number;
}

/** The policy record's version after the change; the key space's revision does not move. */
export interface PolicySetResult {
  readonly type: 'policySet';
  readonly version: number;
  readonly revision: number;
}

/** The table's epoch after the change; the key space's revision does not move. */
export interface OwnershipSetResult {
  readonly type: 'ownershipSet';
  readonly epoch: number;
  readonly revision: number;
}

/** The tenant table's version after the change; the key space's revision does not move. */
export interface TenantsSetResult {
  readonly type: 'tenantsSet';
  readonly version: number;
  readonly revision: number;
}

/** The keys written and the leases recreated; `revision`: the cell's revision after the floor. */
export interface ImportKeysResult {
  readonly type: 'importKeys';
  readonly imported: number;
  readonly leases: readonly { readonly id: number; readonly ttlMs: number; readonly remainingMs: number }[];
  readonly revision: number;
}

export type CommandResult =
  | ImportKeysResult
  | TenantsSetResult
  | OwnershipSetResult
  | PolicySetResult
  | PutResult
  | DeleteResult
  | TxnResult
  | CompactResult
  | DeleteLeaseKeysResult
  | LeaseGrantResult
  | LeaseGrantBatchResult
  | LeaseRevokeResult
  | LeaseRevokeBatchResult
  | LeaseCheckpointResult
  | SeqCreateResult
  | SeqCheckResult
  | SeqReleaseResult
  | UpgradeStoreResult;

/** The result a command gets: its type follows from the command's (a put answers a PutResult). */
export type ResultOf<C extends Command> = Extract<CommandResult, { readonly type: C['type'] }>;

/** A command's answer once applied; `duplicate`: answered from the Request-ID table. */
export interface Proposed<C extends Command> {
  readonly result: ResultOf<C>;
  readonly duplicate: boolean;
}

/**
 * Who a command is from: a principal's name ('' anonymous), or `cellWork` for the cell's own
 * (lease expiry, checkpoints, auto compaction, cleanups after a client's request ended). A
 * required argument of every proposal, so no client write can leave it out by accident.
 */
export type Origin = string | undefined;
export const cellWork: Origin = undefined;

/** The one write path: a command through the log, answered with its own result type. */
export interface CommandProposer {
  /** `urgent`: not shed by a leader behind on its commits (src/driver's ProposeOptions). */
  propose<C extends Command>(op: C, requestId: string | undefined, origin: Origin, options?: { readonly urgent?: boolean }): Promise<Proposed<C>>;
}

interface OutcomeBase {
  readonly index: number;
  readonly term: number;
}

/** One committed entry's outcome, in entry order. `duplicate`: answered from the dedup table. */
export type ApplyOutcome =
  | (OutcomeBase & { readonly type: 'noop' })
  | (OutcomeBase & {
      readonly type: 'applied';
      readonly duplicate: boolean;
      readonly requestId: string | null;
      readonly result: CommandResult;
    })
  | (OutcomeBase & {
      readonly type: 'failed';
      readonly duplicate: boolean;
      readonly requestId: string | null;
      readonly error: BatonError;
    });

// ---------------------------------------------------------------------------------------------
// Limits. Every replica must use the same values: they decide what a committed entry does.

/** Deliberately broken store rules, for the simulator's teeth tests only. */
export interface MvccBugs {
  /** Never look a Request-ID up: a retried mutation applies again instead of getting its first answer. */
  readonly dedupOff?: boolean;
  /** A lock contender's entry is created (and granted) without checking that its lease exists. */
  readonly lockWithoutLeaseCheck?: boolean;
  /** A plain put is applied without checking its tenant's hard quotas (#28; the simulator's tenant checker must catch it). */
  readonly tenantQuotaOff?: boolean;
}

export interface MvccLimits {
  readonly keyBytesMax: number;
  readonly valueBytesMax: number;
  /** Operations + compares in one txn (nested ops count once each). */
  readonly txnOpsMax: number;
  /** An encoded command (the Raft entry data). */
  readonly requestBytesMax: number;
  readonly requestIdBytesMax: number;
  readonly dedupWindowMs: number;
  /** Expired dedup records dropped per applied command: bounded work, same on every replica. */
  readonly dedupPrunePerCommandMax: number;
  /** History events below the compact revision deleted per applied entry (bounded work). */
  readonly compactEventsPerEntryMax: number;
  /** Grants outside [min, max] are refused (400), never silently adjusted. */
  readonly leaseTtlMsMin: number;
  readonly leaseTtlMsMax: number;
  /** Past these: 429 quota_exceeded. Keys per lease also bounds a revocation's work. */
  readonly leasesMax: number;
  readonly leaseKeysMax: number;
  readonly leaseCheckpointBatchMax: number;
  /** Grants in one leaseGrantBatch entry (op 19). */
  readonly leaseGrantBatchMax: number;
  /** Leases in one leaseRevokeBatch entry (op 21). */
  readonly leaseRevokeBatchMax: number;
  /**
   * A put naming a lease that does not exist fails with lease_not_found. Always on in a node;
   * off only for the older reference-model tests, whose model has no lease table.
   */
  readonly leaseAttachStrict: boolean;
}

export const defaultMvccLimits: MvccLimits = {
  keyBytesMax: limits.keyBytesMax,
  valueBytesMax: limits.valueBytesMax,
  txnOpsMax: limits.txnOpsMax,
  requestBytesMax: limits.requestBytesMax,
  requestIdBytesMax: limits.requestIdBytesMax,
  dedupWindowMs: 10 * 60 * 1000,
  dedupPrunePerCommandMax: 8,
  compactEventsPerEntryMax: 512,
  leaseTtlMsMin: limits.leaseTtlMsMin,
  leaseTtlMsMax: limits.leaseTtlMsMax,
  leasesMax: limits.leasesMax,
  leaseKeysMax: limits.leaseKeysMax,
  leaseCheckpointBatchMax: 1_000,
  leaseGrantBatchMax: limits.leaseGrantBatchMax,
  leaseRevokeBatchMax: limits.leaseRevokeBatchMax,
  leaseAttachStrict: true,
};

/**
 * How a store encodes its records (src/mvcc/records.ts): 1 = fixed-width headers, events that
 * repeat the new value, JSON dedup outcomes (stores created before issue 22); 2 = varint
 * headers, events without the new value, binary dedup outcomes; 3 = format 2's records, and
 * every member can apply leaseGrantBatch (op 19), so a leader may propose it (older versions
 * refuse op 19 as malformed); 4 = the same, and every member can also apply leaseRevokeBatch (op
 * 21: the leader's expiry, many leases per entry; older versions refuse op 21 as malformed); 5 =
 * the same records, and lease ids a cell assigns start at its cell's base (lease-state.ts
 * leaseIdBase: ids granted in different cells differ, so a moved lease keeps its id; older
 * versions would assign the next small id, so the leader moves a store here only once every member
 * applies it). Replicated: every member writes the format its state names, so the same log gives
 * the same bytes.
 */
export type StoreFormat = 1 | 2 | 3 | 4 | 5;

/** The persistent bookkeeping, written in the same storage transaction as the state it describes. */
export interface MvccMeta {
  readonly appliedIndex: number;
  readonly appliedTerm: number;
  /** Invariant: revision >= compactRevision. */
  readonly revision: number;
  readonly compactRevision: number;
  /** "Now" for dedup expiry: advanced by the proposers' clock steps (see dedup.ts), monotonic. */
  readonly dedupClockMs: number;
  /** The format this store writes (the meta record's first byte). */
  readonly storeFormat: StoreFormat;
  /**
   * The fencing epoch (epoch.ts): revisions stay in [epoch * 2^40, (epoch + 1) * 2^40). 0 for
   * every store not made by a restore; a restore starts the new cell at the old epoch + 1.
   */
  readonly epoch: number;
}
