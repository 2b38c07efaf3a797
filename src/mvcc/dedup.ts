// Request-ID deduplication as replicated state: the outcome of every mutation that carries a
// Request-ID is stored beside the data, keyed by the ID, so a retry (even through a new leader,
// after a restart or a snapshot install) gets the first answer and changes nothing.
//
// Time is the dedup clock, replicated state advanced only by what the entries carry, never a
// local clock. Each entry carries its proposer's wall clock and id; proposers' clocks disagree
// and step (NTP, a VM restore, an RTC years off), so the absolute values are never compared
// across members. The clock advances by each member's own step since its previous entry,
// clamped to [0, stepMax], counted from where the clock stood at that previous entry (so that
// several members' overlapping steps are not added up). A member off by any amount, or one step
// of any size, moves the clock by at most stepMax (window / 60). Records are stamped with the
// clock at apply, and expire when it has moved more than the window past their stamp. A stamp
// at most stepMax older than the member's last one (proposals reordered) is ignored. Sparse
// traffic (a member's entries more than stepMax apart) only lengthens the window in real time:
// the clock still moves stepMax per such entry, so pruning never stalls for long (records live
// at most about members x 60 entries beyond the window).
import { assert } from '../base/assert.js';
import { RequestIdReusedError } from '../base/errors.js';
import { ContentHasher } from './content-hash.js';
import { ByteReader, ByteWriter } from './byte-codec.js';
import { concatBytes, emptyBytes, fromUtf8, u64Bytes, utf8 } from './bytes.js';
import {
  decodeDedupRecord,
  encodeDedupRecord,
  type RequestFingerprint,
  type StoredOutcome,
} from './dedup-record.js';
import { dedupKey, expiryKey, parseExpiryKey, tablePrefix, tableRange } from './layout.js';
import type { Command, KvReader, KvWriter, MvccLimits, StoreFormat } from './types.js';

export type { RequestFingerprint, StoredOutcome } from './dedup-record.js';

export function requestFingerprint(op: Command): RequestFingerprint {
  // Key-value mutations are exactly what the client sent, so their whole body must match. The
  // others are built by the node on each try (a lock's queue entry carries the node's clock in
  // its value, a settling retry turns a wait into a try-lock): for them the Request-ID decides,
  // as before, once kind and key agree.
  if (op.type !== 'put' && op.type !== 'delete' && op.type !== 'txn') return { kind: op.type, key: firstKeyOf(op), digest: '' };
  const hasher = new ContentHasher();
  hashCanonical(hasher, op);
  // 32 bits: a different body with the same ID is a client bug; one in 4 billion replays.
  return { kind: op.type, key: firstKeyOf(op), digest: hasher.digest32().toString(16).padStart(8, '0') };
}

function firstKeyOf(op: Command): string | null {
  switch (op.type) {
    case 'put':
    case 'delete':
    case 'seqCheck':
    case 'seqRelease':
      return op.key;
    case 'seqCreate':
      return op.prefix;
    case 'txn':
      return op.compare[0]?.key ?? op.success[0]?.key ?? op.failure[0]?.key ?? null;
    default:
      return null;
  }
}

/** Hashes a JSON-like value with object keys in sorted order: equal content, equal digest. */
function hashCanonical(hasher: ContentHasher, value: unknown): void {
  if (value instanceof Uint8Array) {
    hasher.update(utf8('b')).updateField(value);
  } else if (Array.isArray(value)) {
    hasher.update(utf8('a')).updateNumber(value.length);
    for (const item of value) hashCanonical(hasher, item);
  } else if (typeof value === 'object' && value !== null) {
    const names = Object.keys(value)
      .filter((name) => (value as Record<string, unknown>)[name] !== undefined)
      .sort();
    hasher.update(utf8('o')).updateNumber(names.length);
    for (const name of names) {
      hasher.updateField(utf8(name));
      hashCanonical(hasher, (value as Record<string, unknown>)[name]);
    }
  } else {
    // Strings, numbers, booleans and null: JSON text keeps their type ("1" and 1 differ).
    hasher.update(utf8('v')).updateField(utf8(JSON.stringify(value) ?? 'undefined'));
  }
}

function sameRequest(first: RequestFingerprint, again: RequestFingerprint): boolean {
  return first.kind === again.kind && first.key === again.key && first.digest === again.digest;
}

/** How far one entry may move the dedup clock: a clock step costs at most this much window. */
export function dedupClockStepMaxMs(limits: MvccLimits): number {
  return Math.max(1, Math.floor(limits.dedupWindowMs / 60));
}

/**
 * Each member's last stamp and the clock it anchored, read once and written once per applied batch
 * (a get and a put of the same record for every entry cost ~10% of applying a put). Write it back
 * with `flush` before the batch commits; the stored bytes equal those of writing every time.
 */
export class DedupSources {
  private readonly known = new Map<number, { lastMs: number; anchorMs: number } | null>();
  private readonly dirty = new Set<number>();

  constructor(private readonly writer: KvWriter) {}

  get(source: number): { lastMs: number; anchorMs: number } | null {
    let record = this.known.get(source);
    if (record === undefined) {
      const stored = this.writer.get(sourceKey(source));
      if (stored === undefined) {
        record = null;
      } else {
        const reader = new ByteReader(stored, 'stored', 'dedup source');
        record = { lastMs: reader.u64(), anchorMs: reader.u64() };
      }
      this.known.set(source, record);
    }
    return record;
  }

  set(source: number, lastMs: number, anchorMs: number): void {
    this.known.set(source, { lastMs, anchorMs });
    this.dirty.add(source);
  }

  flush(): void {
    for (const source of this.dirty) {
      const record = this.known.get(source);
      assert(record !== undefined && record !== null, 'a changed source is known');
      this.writer.put(sourceKey(source), new ByteWriter(16).u64(record.lastMs).u64(record.anchorMs).finish());
    }
    this.dirty.clear();
  }
}

function sourceKey(source: number): Uint8Array {
  return concatBytes([tablePrefix.dedupSource, u64Bytes(source)]);
}

/**
 * The dedup clock after an entry stamped `atMs` by member `source`, and records that member's
 * stamp. Entries without a source (older versions: a log tail written before an upgrade, mixing
 * all members' clocks) only start the clock. Deterministic: the same entries give the same clock
 * and bytes on every replica.
 */
export function dedupAdvanceClock(
  sources: DedupSources,
  clockMs: number,
  stamp: { source: number | undefined; atMs: number },
  limits: MvccLimits,
): number {
  // The first stamp ever starts the clock (so its values read as wall times).
  if (clockMs === 0) clockMs = stamp.atMs;
  if (stamp.source === undefined) return clockMs;
  const previous = sources.get(stamp.source);
  const stepMaxMs = dedupClockStepMaxMs(limits);
  let next = clockMs;
  if (previous !== null) {
    const { lastMs, anchorMs } = previous;
    // Slightly older than the member's last stamp: proposals reordered on the way; it moves
    // nothing and the last stamp stays (a real step back of more than stepMax re-anchors below).
    if (stamp.atMs < lastMs && lastMs - stamp.atMs <= stepMaxMs) return clockMs;
    const stepMs = Math.min(Math.max(stamp.atMs - lastMs, 0), stepMaxMs);
    next = Math.max(clockMs, anchorMs + stepMs);
  }
  // A member seen for the first time only records its stamp: its next entry measures a step.
  sources.set(stamp.source, stamp.atMs, next);
  assert(next >= clockMs, 'the dedup clock only moves forward');
  return next;
}

/** The recorded outcome of `requestId` if it is still inside the window at `clockMs`. */
export function dedupLookup(
  reader: KvReader,
  request: { requestId: Uint8Array; clockMs: number; op?: Command },
  limits: MvccLimits,
): StoredOutcome | null {
  const stored = reader.get(dedupKey(request.requestId));
  if (stored === undefined) return null;
  const record = decodeDedupRecord(stored);
  // An expired record not yet pruned must act exactly like a pruned one.
  if (request.clockMs - record.stampMs > limits.dedupWindowMs) return null;
  // The same Request-ID on another request is a client bug: refuse it (the first record stays,
  // so an identical retry of the first request still replays its answer).
  if (request.op !== undefined && record.request !== undefined) {
    const again = requestFingerprint(request.op);
    if (!sameRequest(record.request, again)) {
      const first = { kind: record.request.kind, key: record.request.key };
      return { ok: false, error: new RequestIdReusedError(fromUtf8(request.requestId), first, again) };
    }
  }
  return record.outcome;
}

/**
 * Records `outcome` stamped with the dedup clock `clockMs` (never an entry's own time), in the
 * store's format.
 */
export function dedupRecord(
  writer: KvWriter,
  request: { requestId: Uint8Array; clockMs: number; op?: Command },
  outcome: StoredOutcome,
  format: StoreFormat,
): void {
  const key = dedupKey(request.requestId);
  const old = writer.get(key);
  if (old !== undefined) writer.delete(expiryKey(decodeDedupRecord(old).stampMs, request.requestId));
  const fingerprint = request.op === undefined ? {} : { request: requestFingerprint(request.op) };
  writer.put(key, encodeDedupRecord({ stampMs: request.clockMs, outcome, ...fingerprint }, format));
  writer.put(expiryKey(request.clockMs, request.requestId), emptyBytes);
}

/** Drops at most `dedupPrunePerCommandMax` records that expired at `clockMs`, oldest first. */
export function dedupPrune(writer: KvWriter, clockMs: number, limits: MvccLimits): void {
  const horizonMs = clockMs - limits.dedupWindowMs;
  if (horizonMs <= 0) return;
  const range = { start: tablePrefix.expiry, end: expiryKey(horizonMs, emptyBytes) };
  const doomed: Uint8Array[] = [];
  for (const entry of writer.range(range)) {
    doomed.push(entry.key);
    if (doomed.length >= limits.dedupPrunePerCommandMax) break;
  }
  for (const key of doomed) {
    writer.delete(key);
    writer.delete(dedupKey(parseExpiryKey(key).requestId));
  }
}

/** The oldest proposal time in the expiry index, or undefined when it is empty. */
export function dedupOldestMs(reader: KvReader): number | undefined {
  for (const entry of reader.range(tableRange(tablePrefix.expiry))) return parseExpiryKey(entry.key).proposedAtMs;
  return undefined;
}
