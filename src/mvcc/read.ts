// Reads: ranges at the current revision (from the current table) and at a retained past revision
// (the current table, corrected by the first event after that revision for each changed key: its
// prevKv is the key's state then). History at or above the compaction point is always complete,
// so a past read needs nothing below it.
import { assert } from '../base/assert.js';
import { CompactedError, FutureRevisionError, KeyNotFoundError } from '../base/errors.js';
import { compareBytes, emptyBytes, fromUtf8, latin1, readU32 } from './bytes.js';
import {
  currentKey,
  currentRange,
  historyKey,
  leaseRange,
  parseHistoryKey,
  parseRevisionIndexKey,
  revisionIndexRange,
  tablePrefix,
} from './layout.js';
import { decodeEvent, decodeRecord, recordModRevision } from './records.js';
import { validateRange } from './validate.js';
import type {
  KeyValue,
  KvRange,
  KvReader,
  MvccEvent,
  MvccLimits,
  MvccMeta,
  RangeRequest,
  RangeResult,
} from './types.js';

export interface ReadContext {
  readonly reader: KvReader;
  readonly meta: MvccMeta;
  readonly limits: MvccLimits;
}

/** Checks a requested revision (0 = current) against what the store retains. */
export function readRevision(meta: MvccMeta, requested: number | undefined): number {
  const revision = requested === undefined || requested === 0 ? meta.revision : requested;
  if (revision > meta.revision) throw new FutureRevisionError(revision, meta.revision);
  if (revision < meta.compactRevision) throw new CompactedError(meta.compactRevision);
  return revision;
}

/** `inTxn`: an absent single key is an empty answer instead of key_not_found. */
export function readRange(context: ReadContext, request: RangeRequest, inTxn: boolean): RangeResult {
  const range = validateRange(request, context.limits, inTxn);
  const revision = readRevision(context.meta, request.revision);
  const limit = request.limit ?? 0;
  const result =
    revision === context.meta.revision
      ? readCurrent(context.reader, range, request, limit)
      : readPast(context.reader, range, request, { revision, limit });
  if (!inTxn && request.prefix !== true && result.count === 0) {
    throw new KeyNotFoundError(`key ${request.key} not found`, { key: request.key, revision });
  }
  return { type: 'get', revision, ...result };
}

type RangePart = Pick<RangeResult, 'count' | 'more' | 'kvs'>;

function readCurrent(reader: KvReader, range: KvRange, request: RangeRequest, limit: number): RangePart {
  if (request.prefix !== true) {
    // A single key is a point lookup: much cheaper than opening a range cursor.
    const stored = reader.get(currentKey(range.start));
    if (stored === undefined) return { count: 0, more: false, kvs: [] };
    const kvs = request.countOnly === true ? [] : [decodeRecord(request.key, stored, request.keysOnly === true)];
    return { count: 1, more: false, kvs };
  }
  const kvs: KeyValue[] = [];
  let count = 0;
  for (const entry of reader.range(currentRange(range))) {
    count++;
    if (request.countOnly === true || (limit > 0 && kvs.length >= limit)) continue;
    const key = fromUtf8(entry.key.subarray(1));
    kvs.push(decodeRecord(key, entry.value, request.keysOnly === true));
  }
  return { count, more: kvs.length < count && request.countOnly !== true, kvs };
}

function readPast(
  reader: KvReader,
  range: KvRange,
  request: RangeRequest,
  at: { revision: number; limit: number },
): RangePart {
  const found: { key: Uint8Array; kv: KeyValue }[] = [];
  // The first event after `revision` of each key decides: its prevKv was the state at `revision`.
  const decided = new Set<string>();
  for (const entry of reader.range(revisionIndexRange(range))) {
    const { key, revision } = parseRevisionIndexKey(entry.key);
    if (revision <= at.revision) continue;
    const mapKey = latin1(key);
    if (decided.has(mapKey)) continue;
    decided.add(mapKey);
    const stored = reader.get(historyKey(revision, readU32(entry.value, 0)));
    assert(stored !== undefined, 'the revision index points at a missing event');
    const prevKv = decodeEvent(stored).prevKv;
    if (prevKv !== null) found.push({ key, kv: prevKv });
  }
  // Keys unchanged since `revision` read as they are now.
  for (const entry of reader.range(currentRange(range))) {
    const key = entry.key.subarray(1);
    if (decided.has(latin1(key))) continue;
    assert(recordModRevision(entry.value) <= at.revision, 'a changed key has no index entry');
    found.push({ key, kv: decodeRecord(fromUtf8(key), entry.value) });
  }
  found.sort((a, b) => compareBytes(a.key, b.key));
  const count = found.length;
  if (request.countOnly === true) return { count, more: false, kvs: [] };
  const kept = at.limit > 0 ? found.slice(0, at.limit) : found;
  const kvs = kept.map(({ kv }) => (request.keysOnly === true ? { ...kv, value: emptyBytes } : kv));
  return { count, more: kvs.length < count, kvs };
}

/** Events with revision >= startRevision, in order, at most `limit` (watch catch-up). */
export function readEvents(
  context: ReadContext,
  options: { startRevision: number; limit: number },
): MvccEvent[] {
  const { meta } = context;
  if (options.startRevision < meta.compactRevision) throw new CompactedError(meta.compactRevision);
  const events: MvccEvent[] = [];
  const start = historyKey(Math.max(options.startRevision, 0), 0);
  const end = Uint8Array.of((tablePrefix.history[0] as number) + 1);
  for (const entry of context.reader.range({ start, end })) {
    if (events.length >= options.limit) break;
    assert(parseHistoryKey(entry.key).revision <= meta.revision, 'history beyond the revision');
    events.push(decodeEvent(entry.value));
  }
  return events;
}

/** The keys attached to a lease, in key order. */
export function readLeaseKeys(reader: KvReader, lease: number): string[] {
  const keys: string[] = [];
  for (const entry of reader.range(leaseRange(lease))) keys.push(fromUtf8(entry.key.subarray(9)));
  return keys;
}
