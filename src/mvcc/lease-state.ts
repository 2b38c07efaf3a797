// The replicated lease table: which leases exist, their granted TTL, the remaining TTL as last
// checkpointed through the log, and how many keys each holds. It lives in the same engine as the
// keys and is written in the same storage transaction, so it survives restarts, travels in
// snapshots and is part of hash(). Deadlines are NOT here: they are the leader's in-memory,
// monotonic-clock business (src/lease); the table only holds what a new leader needs to never
// cut a TTL short (remaining as checkpointed) and what apply needs to judge puts (existence,
// key counts).
//
//   'g' id:8           ttlMs:8 remainingMs:8 keyCount:4
//   'n'                nextId:8 leaseCount:8   (absent = no lease granted yet)
//                      From store format 5, an id the cell assigns is at least its cell's base
//                      (leaseIdBase), so two cells never assign the same id (but for cells whose
//                      16-bit tags collide, 1 in 65,535 pairs; a move then refuses the lease, 412)
//   'o' id:8           origin cell id (UTF-8): a lease a namespace move brought from the cell
//                      that granted it (absent = granted here); removed with the lease
import { assert } from '../base/assert.js';
import { crc32 } from '../base/crc32.js';
import {
  InvalidArgumentError,
  LeaseNotFoundError,
  QuotaExceededError,
  TooLargeError,
} from '../base/errors.js';
import { concatBytes, prefixEnd, readU32, readU64, u64Bytes, writeU32, writeU64 } from './bytes.js';
import { currentKey } from './layout.js';
import { readOwnershipRecord } from './ownership-record.js';
import { decodeRecord, storeFormatLeaseIdBase } from './records.js';
import type { KvReader, KvWriter, MvccLimits, StoreFormat } from './types.js';

const grantPrefix = Uint8Array.of(0x67);
const counterKey = Uint8Array.of(0x6e);
const originPrefix = Uint8Array.of(0x6f);
const recordBytes = 20;

export interface LeaseRecord {
  readonly id: number;
  readonly ttlMs: number;
  /** Invariant: 0 <= remainingMs <= ttlMs. */
  readonly remainingMs: number;
  /** Invariant: equals the number of 'l' index entries of this lease. */
  readonly keyCount: number;
}

interface Counter {
  readonly nextId: number;
  readonly leaseCount: number;
}

/** Ids one cell may assign: 2^37 (over 10^11) from its base. */
export const leaseIdSpan = 2 ** 37;

/**
 * Where the ids a cell assigns start (store format 5): its tag, 1 to 65,535 from its cell id,
 * times leaseIdSpan: at most 2^53 - 1 with the whole span, so every id stays a safe integer.
 */
export function leaseIdBase(cellId: string): number {
  return (1 + (crc32(new TextEncoder().encode(cellId)) % 65_535)) * leaseIdSpan;
}

/**
 * The first id the counter may assign: its next id, raised to the cell's base in format 5 once
 * the cell has an ownership table naming it (a cell of no control plane keeps small ids). Only
 * read while the counter is below every base: a raised counter stays above its base.
 */
function firstAssignable(reader: KvReader, counter: Counter, storeFormat: StoreFormat): number {
  if (storeFormat < storeFormatLeaseIdBase || counter.nextId >= leaseIdSpan) return counter.nextId;
  const cell = readOwnershipRecord(reader)?.table.cell;
  return cell === undefined ? counter.nextId : Math.max(counter.nextId, leaseIdBase(cell));
}

/**
 * Does granting `id` move a counter about to assign `start`? Below format 5, any id at or past it
 * (so an id once granted is never assigned again). From format 5, only an id in the counter's own
 * range: a lease a move brought from another cell's range, or a client's id there, is never
 * assigned here anyway, and must not carry this cell's counter into that range.
 */
function movesCounter(id: number, start: number, storeFormat: StoreFormat): boolean {
  return storeFormat < storeFormatLeaseIdBase || Math.floor(id / leaseIdSpan) === Math.floor(start / leaseIdSpan);
}

function grantKey(id: number): Uint8Array {
  return concatBytes([grantPrefix, u64Bytes(id)]);
}

function encodeLease(lease: LeaseRecord): Uint8Array {
  assert(lease.remainingMs >= 0 && lease.remainingMs <= lease.ttlMs, 'remaining within the TTL');
  assert(lease.keyCount >= 0, 'key count is never negative');
  const out = new Uint8Array(recordBytes);
  writeU64(out, 0, lease.ttlMs);
  writeU64(out, 8, lease.remainingMs);
  writeU32(out, 16, lease.keyCount);
  return out;
}

function decodeLease(id: number, bytes: Uint8Array): LeaseRecord {
  assert(bytes.length === recordBytes, 'lease record size');
  return { id, ttlMs: readU64(bytes, 0), remainingMs: readU64(bytes, 8), keyCount: readU32(bytes, 16) };
}

function readCounter(reader: KvReader): Counter {
  const stored = reader.get(counterKey);
  if (stored === undefined) return { nextId: 1, leaseCount: 0 };
  assert(stored.length === 16, 'lease counter size');
  return { nextId: readU64(stored, 0), leaseCount: readU64(stored, 8) };
}

function writeCounter(writer: KvWriter, counter: Counter): void {
  assert(counter.nextId >= 1 && counter.leaseCount >= 0, 'lease counter in range');
  const out = new Uint8Array(16);
  writeU64(out, 0, counter.nextId);
  writeU64(out, 8, counter.leaseCount);
  writer.put(counterKey, out);
}

function originKey(id: number): Uint8Array {
  return concatBytes([originPrefix, u64Bytes(id)]);
}

/** The cell that granted lease `id`, when a namespace move brought it here; null: granted here (or absent). */
export function leaseOrigin(reader: KvReader, id: number): string | null {
  const stored = reader.get(originKey(id));
  return stored === undefined ? null : Buffer.from(stored).toString('utf8');
}

/** Records where an imported lease was granted (the lease exists here). */
export function setLeaseOrigin(writer: KvWriter, id: number, origin: string): void {
  assert(readLease(writer, id) !== null, 'an origin is recorded for a lease held here');
  assert(origin.length > 0, 'an origin names a cell');
  writer.put(originKey(id), new Uint8Array(Buffer.from(origin, 'utf8')));
}

export function readLease(reader: KvReader, id: number): LeaseRecord | null {
  const stored = reader.get(grantKey(id));
  return stored === undefined ? null : decodeLease(id, stored);
}

/** Every lease with an id above `afterId`, ascending by id (a new leader's tracker starts from these). */
export function* readLeases(reader: KvReader, afterId = 0): Generator<LeaseRecord> {
  const start = afterId > 0 ? grantKey(afterId + 1) : grantPrefix;
  for (const entry of reader.range({ start, end: prefixEnd(grantPrefix) })) {
    assert(entry.key.length === 9, 'lease key size');
    yield decodeLease(readU64(entry.key, 1), entry.value);
  }
}

export function leaseCount(reader: KvReader): number {
  return readCounter(reader).leaseCount;
}

export function validateLeaseTtl(ttlMs: unknown, limits: MvccLimits): number {
  if (typeof ttlMs !== 'number' || !Number.isSafeInteger(ttlMs)) {
    throw new InvalidArgumentError('a lease TTL is an integer number of milliseconds', { ttlMs });
  }
  // Never silently raised: a client that asked for less would believe in a shorter failover.
  if (ttlMs < limits.leaseTtlMsMin || ttlMs > limits.leaseTtlMsMax) {
    throw new InvalidArgumentError(
      `a lease TTL must be between ${limits.leaseTtlMsMin / 1000} s and ${limits.leaseTtlMsMax / 1000} s`,
      { ttlMs, ttlMsMin: limits.leaseTtlMsMin, ttlMsMax: limits.leaseTtlMsMax },
    );
  }
  return ttlMs;
}

/** Grants a lease (the next free id, or the client's), with its full TTL remaining. */
export function grantLease(
  writer: KvWriter,
  request: { ttlMs: number; id?: number | undefined },
  limits: MvccLimits,
  storeFormat: StoreFormat,
): LeaseRecord {
  validateLeaseTtl(request.ttlMs, limits);
  const counter = readCounter(writer);
  if (counter.leaseCount >= limits.leasesMax) {
    throw new QuotaExceededError(`the cell holds its maximum of ${limits.leasesMax} leases`, {
      limit: limits.leasesMax,
    });
  }
  const start = firstAssignable(writer, counter, storeFormat);
  let id = request.id;
  if (id !== undefined) {
    if (readLease(writer, id) !== null) throw new InvalidArgumentError(`lease ${id} already exists`, { id });
  } else {
    // Client-chosen ids may sit ahead of the counter: skip them (each is skipped at most once).
    id = start;
    while (readLease(writer, id) !== null) id++;
  }
  assert(id >= 1 && Number.isSafeInteger(id), 'lease ids are positive safe integers');
  const lease: LeaseRecord = { id, ttlMs: request.ttlMs, remainingMs: request.ttlMs, keyCount: 0 };
  writer.put(grantKey(id), encodeLease(lease));
  const nextId = movesCounter(id, start, storeFormat) ? Math.max(start, id + 1) : start;
  writeCounter(writer, { nextId, leaseCount: counter.leaseCount + 1 });
  return lease;
}

/**
 * Grants a batch, all or none: the quota and every client-chosen id are checked before the first
 * write. Ids not given are assigned in order from the counter, as one grant after another would.
 */
export function grantLeases(
  writer: KvWriter,
  grants: readonly { ttlMs: number; id?: number | undefined }[],
  limits: MvccLimits,
  storeFormat: StoreFormat,
): LeaseRecord[] {
  const counter = readCounter(writer);
  if (counter.leaseCount + grants.length > limits.leasesMax) {
    throw new QuotaExceededError(`the cell holds at most ${limits.leasesMax} leases (${counter.leaseCount} now, ${grants.length} asked)`, {
      limit: limits.leasesMax,
    });
  }
  for (const grant of grants) {
    validateLeaseTtl(grant.ttlMs, limits);
    if (grant.id !== undefined && readLease(writer, grant.id) !== null) {
      throw new InvalidArgumentError(`lease ${grant.id} already exists`, { id: grant.id });
    }
  }
  // Ids are settled before any write: an assigned id skips existing leases (as grantLease does)
  // and every id the batch names, so no grant of the batch can collide with another. Existing
  // leases at or above the counter come from one ascending range read merged with the ids as
  // they are assigned (usually none: the counter passes every granted id), not one read per id.
  const named = grants.some((grant) => grant.id !== undefined)
    ? new Set(grants.flatMap((grant) => (grant.id === undefined ? [] : [grant.id])))
    : null;
  const start = firstAssignable(writer, counter, storeFormat);
  let next = start;
  const existing = leaseIdsFrom(writer, next);
  const ids = new Array<number>(grants.length);
  try {
    for (let i = 0; i < grants.length; i++) {
      const given = (grants[i] as { id?: number | undefined }).id;
      if (given !== undefined) {
        ids[i] = given;
        continue;
      }
      while (named?.has(next) === true || existing.has(next)) next++;
      ids[i] = next++;
    }
  } finally {
    existing.close();
  }
  assert(new Set(ids).size === ids.length, 'a batch never assigns one id twice');
  // One record per lease and the counter once (not once per grant: half the batch's writes),
  // ending where grant after grant would: past the highest id, counting every lease. Keys and
  // records are written from one scratch each (the engine copies them: KvWriter.put).
  let nextId = start;
  const key = new Uint8Array(9);
  key[0] = grantPrefix[0] as number;
  const record = new Uint8Array(recordBytes);
  const leases = new Array<LeaseRecord>(grants.length);
  for (let i = 0; i < grants.length; i++) {
    const id = ids[i] as number;
    const ttlMs = (grants[i] as { ttlMs: number }).ttlMs;
    assert(id >= 1 && Number.isSafeInteger(id), 'lease ids are positive safe integers');
    writeU64(key, 1, id);
    writeU64(record, 0, ttlMs);
    writeU64(record, 8, ttlMs);
    writeU32(record, 16, 0);
    writer.put(key, record);
    if (movesCounter(id, start, storeFormat)) nextId = Math.max(nextId, id + 1);
    leases[i] = { id, ttlMs, remainingMs: ttlMs, keyCount: 0 };
  }
  writeCounter(writer, { nextId, leaseCount: counter.leaseCount + grants.length });
  return leases;
}

/**
 * The lease ids at or above `from`, asked in ascending order (has(id) with id never smaller than
 * the last one asked): one range read, advanced only as far as the ids asked.
 */
function leaseIdsFrom(source: KvReader, from: number): { has(id: number): boolean; close(): void } {
  const entries = source.range({ start: grantKey(from), end: prefixEnd(grantPrefix) })[Symbol.iterator]();
  let current = -1; // the smallest id read and not yet passed; Infinity past the last
  let last = from - 1;
  const advance = (): void => {
    const entry = entries.next();
    if (entry.done === true) {
      current = Number.POSITIVE_INFINITY;
      return;
    }
    assert(entry.value.key.length === 9, 'lease key size');
    current = readU64(entry.value.key, 1);
  };
  return {
    has(id) {
      assert(id >= last, 'ids are asked in ascending order');
      last = id;
      if (current === -1) advance();
      while (current < id) advance();
      return current === id;
    },
    close() {
      entries.return?.();
    },
  };
}

/** Removes the lease record (its keys must already be deleted) and its origin. */
export function removeLease(writer: KvWriter, id: number): void {
  const lease = readLease(writer, id);
  if (lease === null) throw new LeaseNotFoundError(`lease ${id} not found`, { id });
  assert(lease.keyCount === 0, 'a lease is removed only after its keys');
  writer.delete(grantKey(id));
  // A later lease granted here under this id must not pass for the imported one.
  writer.delete(originKey(id));
  const counter = readCounter(writer);
  assert(counter.leaseCount >= 1, 'a present lease is counted');
  writeCounter(writer, { nextId: counter.nextId, leaseCount: counter.leaseCount - 1 });
}

export function requireLease(reader: KvReader, id: number): LeaseRecord {
  const lease = readLease(reader, id);
  if (lease === null) throw new LeaseNotFoundError(`lease ${id} not found`, { id });
  return lease;
}

/**
 * Records remaining TTLs (clamped to each lease's TTL: a checkpoint never extends a lease past
 * a full renewal). Absent leases are skipped: a revocation may have committed first. Returns
 * how many leases were updated.
 */
export function checkpointLeases(
  writer: KvWriter,
  leases: readonly { id: number; remainingMs: number }[],
  limits: MvccLimits,
): number {
  if (leases.length > limits.leaseCheckpointBatchMax) {
    throw new TooLargeError('lease checkpoint batch', leases.length, limits.leaseCheckpointBatchMax);
  }
  let updated = 0;
  for (const { id, remainingMs } of leases) {
    const lease = readLease(writer, id);
    if (lease === null) continue;
    const clamped = Math.min(remainingMs, lease.ttlMs);
    writer.put(grantKey(id), encodeLease({ ...lease, remainingMs: clamped }));
    updated++;
  }
  return updated;
}

/**
 * Checks that each put's lease exists and has room, before the command writes anything (a
 * failed check must leave no partial txn behind). Only a new attachment counts: a key that
 * already belongs to the lease does not take more room.
 */
export function checkLeaseAttachments(
  reader: KvReader,
  puts: readonly { keyBytes: Uint8Array; key: string; lease: number }[],
  limits: MvccLimits,
): void {
  const added = new Map<number, number>();
  for (const put of puts) {
    if (put.lease === 0) continue;
    const lease = readLease(reader, put.lease);
    if (lease === null) {
      if (!limits.leaseAttachStrict) continue;
      throw new LeaseNotFoundError(`lease ${put.lease} not found`, { id: put.lease, key: put.key });
    }
    const stored = reader.get(currentKey(put.keyBytes));
    const current = stored === undefined ? null : decodeRecord(put.key, stored);
    if (current?.lease === put.lease) continue;
    const count = (added.get(put.lease) ?? 0) + 1;
    added.set(put.lease, count);
    if (lease.keyCount + count > limits.leaseKeysMax) {
      throw new QuotaExceededError(`lease ${put.lease} holds its maximum of ${limits.leaseKeysMax} keys`, {
        id: put.lease,
        limit: limits.leaseKeysMax,
      });
    }
  }
}

/** Keeps a lease's key count in step with its index entries (called by the revision writer). */
export function adjustLeaseKeyCount(writer: KvWriter, id: number, delta: 1 | -1): void {
  assert(id !== 0, 'lease 0 is "no lease"');
  const lease = readLease(writer, id);
  // Without strict attachment (tests predating the lease table) a key may name no record.
  if (lease === null) return;
  assert(lease.keyCount + delta >= 0, 'a lease never holds fewer than zero keys');
  writer.put(grantKey(id), encodeLease({ ...lease, keyCount: lease.keyCount + delta }));
}

/**
 * A lease record carried into a restored cell (restore-epoch.ts): its remaining TTL plus a grace,
 * never above its TTL (the table's invariant); any other entry unchanged. The grace covers the
 * new cell's first election, so no owner loses its keys before it could renew.
 */
export function withRestoreGrace(key: Uint8Array, value: Uint8Array, graceMs: number): Uint8Array {
  if (key.length !== 1 + 8 || key[0] !== grantPrefix[0]) return value;
  const lease = decodeLease(readU64(key, 1), value);
  return encodeLease({ ...lease, remainingMs: Math.min(lease.ttlMs, lease.remainingMs + graceMs) });
}
