// Reads: ranges at the current revision (from the current table) and at a retained past revision
// (the current table, corrected by the first event after that revision for each changed key: its
// prevKv is the key's state then). History at or above the compaction point is always complete,
// so a past read needs nothing below it. Events for watches: a put's new kv is the next event's
// prevKv or the current record (format 2 stores each value once: records.ts).
import { assert } from '../base/assert.js';
import { CompactedError, FutureRevisionError, KeyNotFoundError } from '../base/errors.js';
import { compareBytes, emptyBytes, fromUtf8, utf8 } from './bytes.js';
import {
  currentKey,
  currentRange,
  historyKey,
  leaseRange,
  parseHistoryKey,
  parseRevisionIndexKey,
  revisionIndexFrom,
  revisionIndexRange,
  revisionIndexSeq,
  tablePrefix,
} from './layout.js';
import { completeEvent, decodeRecord, decodeStoredEvent, recordModRevision, type StoredEvent } from './records.js';
import { isSingleKeyRead, validateRange } from './validate.js';
import type {
  KeyValue,
  KvEntry,
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
  if (!inTxn && isSingleKeyRead(request) && result.count === 0) {
    throw new KeyNotFoundError(`key ${request.key} not found`, { key: request.key, revision });
  }
  return { type: 'get', revision, ...result };
}

type RangePart = Pick<RangeResult, 'count' | 'more' | 'kvs'>;

function readCurrent(reader: KvReader, range: KvRange, request: RangeRequest, limit: number): RangePart {
  if (isSingleKeyRead(request)) {
    // A single key is a point lookup: much cheaper than opening a range cursor.
    const stored = reader.get(currentKey(range.start));
    if (stored === undefined) return { count: 0, more: false, kvs: [] };
    const kvs = request.countOnly === true ? [] : [decodeRecord(request.key, stored, request.keysOnly === true)];
    return { count: 1, more: false, kvs };
  }
  // The count covers the whole range (etcd's too); only the first `limit` keys are decoded.
  const collect = request.countOnly !== true;
  const kvs: KeyValue[] = [];
  const engineRange = currentRange(range);
  if (request.skipCount === true && collect && limit > 0) {
    let more = false;
    for (const entry of reader.range(engineRange)) {
      if (kvs.length >= limit) {
        more = true;
        break;
      }
      kvs.push(decodeRecord(fromUtf8(entry.key.subarray(1)), entry.value, request.keysOnly === true));
    }
    return { count: kvs.length, more, kvs };
  }
  if (reader.count !== undefined && (!collect || limit > 0)) {
    if (collect) {
      for (const entry of reader.range(engineRange)) {
        kvs.push(decodeRecord(fromUtf8(entry.key.subarray(1)), entry.value, request.keysOnly === true));
        if (kvs.length >= limit) break;
      }
    }
    const count = reader.count(engineRange);
    assert(count >= kvs.length, 'a range counts at least the keys read from it');
    return { count, more: collect && kvs.length < count, kvs };
  }
  let count = 0;
  for (const entry of reader.range(engineRange)) {
    count++;
    if (!collect || (limit > 0 && kvs.length >= limit)) continue;
    const key = fromUtf8(entry.key.subarray(1));
    kvs.push(decodeRecord(key, entry.value, request.keysOnly === true));
  }
  return { count, more: collect && kvs.length < count, kvs };
}

function readPast(
  reader: KvReader,
  range: KvRange,
  request: RangeRequest,
  at: { revision: number; limit: number },
): RangePart {
  const collect = request.countOnly !== true;
  const keysOnly = request.keysOnly === true;
  const kvs: KeyValue[] = [];
  let count = 0;
  for (const found of keysAtRevision(reader, range, at.revision)) {
    count++;
    if (!collect || (at.limit > 0 && kvs.length >= at.limit)) continue;
    if ('kv' in found) kvs.push(keysOnly ? { ...found.kv, value: emptyBytes } : found.kv);
    else kvs.push(decodeRecord(fromUtf8(found.current.key.subarray(1)), found.current.value, keysOnly));
  }
  return { count, more: collect && kvs.length < count, kvs };
}

/** A key live at the past revision: decided by a later event, or its current record (undecoded). */
type PastKey = { readonly kv: KeyValue } | { readonly current: KvEntry };

/**
 * The keys in `range` as they were at `revision`, in key order, by merging two ordered streams:
 * the revision index (per key, its events' revisions ascending) and the current table. The first
 * event after `revision` of a key decides (its prevKv was the key's state then); a key with no
 * such event reads as it is now. Memory stays constant whatever the range's size.
 */
function* keysAtRevision(reader: KvReader, range: KvRange, revision: number): Generator<PastKey> {
  const groups = firstEventsAfter(reader, range, revision)[Symbol.iterator]();
  const currents = reader.range(currentRange(range))[Symbol.iterator]();
  let group = groups.next();
  let current = currents.next();
  try {
    while (group.done !== true || current.done !== true) {
      const order =
        group.done === true ? 1 : current.done === true ? -1 : compareBytes(group.value.key, current.value.key.subarray(1));
      if (order <= 0) {
        const decided = (group.value as EventGroup).decider;
        if (decided !== null) {
          if (decided.prevKv !== null) yield { kv: decided.prevKv };
        } else if (order === 0) {
          yield checkedCurrent((current.value as KvEntry), revision);
        }
        // order < 0 with no later event: deleted at or before `revision`, and absent now.
        group = groups.next();
        if (order === 0) current = currents.next();
      } else {
        // No index entry (compacted history): unchanged since before the compaction point.
        yield checkedCurrent(current.value as KvEntry, revision);
        current = currents.next();
      }
    }
  } finally {
    groups.return(undefined);
    currents.return?.(undefined);
  }
}

function checkedCurrent(entry: KvEntry, revision: number): PastKey {
  assert(recordModRevision(entry.value) <= revision, 'a changed key has no index entry');
  return { current: entry };
}

/** One key's revision-index entries: the first event after the read revision, if any. */
interface EventGroup {
  readonly key: Uint8Array;
  readonly decider: { readonly prevKv: KeyValue | null } | null;
}

function* firstEventsAfter(reader: KvReader, range: KvRange, revision: number): Generator<EventGroup> {
  let key: Uint8Array | null = null;
  let decider: EventGroup['decider'] = null;
  for (const entry of reader.range(revisionIndexRange(range))) {
    const parsed = parseRevisionIndexKey(entry.key);
    if (key === null || compareBytes(parsed.key, key) !== 0) {
      if (key !== null) yield { key, decider };
      key = parsed.key;
      decider = null;
    }
    if (decider !== null || parsed.revision <= revision) continue;
    decider = { prevKv: indexedEvent(reader, parsed.revision, entry.value).prevKv };
  }
  if (key !== null) yield { key, decider };
}

/** The event a revision-index entry points at. */
function indexedEvent(reader: KvReader, revision: number, indexValue: Uint8Array): StoredEvent {
  const stored = reader.get(historyKey(revision, revisionIndexSeq(indexValue)));
  assert(stored !== undefined, 'the revision index points at a missing event');
  return decodeStoredEvent(revision, stored);
}

/** Events with revision >= startRevision, in order, at most `limit` (watch catch-up). */
export function readEvents(
  context: ReadContext,
  options: { startRevision: number; limit: number },
): MvccEvent[] {
  const { meta, reader } = context;
  if (options.startRevision < meta.compactRevision) throw new CompactedError(meta.compactRevision);
  const stored: StoredEvent[] = [];
  const start = historyKey(Math.max(options.startRevision, 0), 0);
  const end = Uint8Array.of((tablePrefix.history[0] as number) + 1);
  for (const entry of reader.range({ start, end })) {
    if (stored.length >= options.limit) break;
    const { revision } = parseHistoryKey(entry.key);
    assert(revision <= meta.revision, 'history beyond the revision');
    stored.push(decodeStoredEvent(revision, entry.value));
  }
  // A format-2 put holds no kv: it is the prevKv of its key's next event, or its current record.
  // Last to first, so a key's later event in this read supplies it without another lookup.
  const events = new Array<MvccEvent>(stored.length);
  const nextPrevKv = new Map<string, KeyValue | null>();
  for (let i = stored.length - 1; i >= 0; i--) {
    const event = stored[i] as StoredEvent;
    let kv = event.kv;
    if (kv === null) kv = nextPrevKv.has(event.key) ? (nextPrevKv.get(event.key) ?? null) : keyAfter(reader, event);
    events[i] = completeEvent(event, kv);
    nextPrevKv.set(event.key, event.prevKv);
  }
  return events;
}

/**
 * The key as `event` (a put) left it: its current record if nothing changed it since, else the
 * prevKv of its next event. Both are above the compact revision, so compaction never took them.
 */
function keyAfter(reader: KvReader, event: StoredEvent): KeyValue | null {
  const keyBytes = utf8(event.key);
  const current = reader.get(currentKey(keyBytes));
  if (current !== undefined && recordModRevision(current) === event.revision) return decodeRecord(event.key, current);
  for (const entry of reader.range(revisionIndexFrom(keyBytes, event.revision + 1))) {
    return indexedEvent(reader, parseRevisionIndexKey(entry.key).revision, entry.value).prevKv;
  }
  return null;
}

/** The keys attached to a lease, in key order. */
export function readLeaseKeys(reader: KvReader, lease: number): string[] {
  const keys: string[] = [];
  for (const entry of reader.range(leaseRange(lease))) keys.push(fromUtf8(entry.key.subarray(9)));
  return keys;
}
