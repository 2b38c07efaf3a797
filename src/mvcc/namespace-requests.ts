// Request-IDs move with their namespace (docs/design/cells.md, "Request-IDs across a move"). The
// dedup table is the cell's, keyed by Request-ID, not by namespace; a record names its namespace
// only through its request's fingerprint (the first key a keyed request names). The source lists
// the records of a namespace from the expiry index (ordered by stamp, so "since T" is one range
// scan, bounded per call); the destination's import writes them into its own table, keeping a
// record it already has (the first outcome wins, as for any Request-ID). A retry of a request
// the source applied before the fence then finds its outcome on the destination.
import { InvalidArgumentError } from '../base/errors.js';
import { decodeDedupRecord, restampDedupRecord } from './dedup-record.js';
import { dedupKey, expiryKey, parseExpiryKey, tablePrefix } from './layout.js';
import { bytesEqual, prefixEnd } from './bytes.js';
import type { KvReader, KvWriter } from './types.js';

export interface NamespaceRequest {
  /** The Request-ID's bytes. */
  readonly id: Uint8Array;
  /** The record as the source stores it (either store format: both decode). */
  readonly record: Uint8Array;
}

export interface NamespaceRequestPage {
  /** `ageMs`: how far this cell's dedup clock (`clockMs`) is past the record's stamp. */
  readonly requests: (NamespaceRequest & { readonly stampMs: number; readonly ageMs: number })[];
  /** Where the next page starts (the last expiry key scanned), or null: the index was read to its end. */
  readonly next: Uint8Array | null;
}

/**
 * Records whose request named a key under `prefix`, with stamps from `sinceMs` on, in stamp order,
 * from after `after` (a page's `next`); at most `scanMax` expiry entries read per call.
 */
export function namespaceRequests(
  reader: KvReader, prefix: string, options: { sinceMs: number; after: Uint8Array | null; scanMax: number; clockMs: number },
): NamespaceRequestPage {
  const requests: (NamespaceRequest & { stampMs: number; ageMs: number })[] = [];
  const from = options.after ?? expiryKey(options.sinceMs, new Uint8Array(0));
  let scanned = 0;
  let last: Uint8Array | null = null;
  for (const entry of reader.range({ start: from, end: prefixEnd(tablePrefix.expiry) })) {
    if (options.after !== null && bytesEqual(entry.key, options.after)) continue;
    if (scanned++ >= options.scanMax) return { requests, next: last };
    last = entry.key;
    const { requestId: id, proposedAtMs } = parseExpiryKey(entry.key);
    const stored = reader.get(dedupKey(id));
    if (stored === undefined) continue;
    const key = decodeDedupRecord(stored).request?.key ?? null;
    if (key !== null && key.startsWith(prefix)) requests.push({ id, record: stored.slice(), stampMs: proposedAtMs, ageMs: Math.max(0, options.clockMs - proposedAtMs) });
  }
  return { requests, next: null };
}

/** Writes imported records into this cell's dedup table; a Request-ID it knows keeps its own. */
export function importRequests(writer: KvWriter, requests: readonly NamespaceRequest[]): number {
  let written = 0;
  for (const request of requests) {
    // Decodes: parseImportRecord checked every record before the import wrote anything.
    const stampMs = decodeDedupRecord(request.record).stampMs;
    const key = dedupKey(request.id);
    if (writer.get(key) !== undefined) continue;
    writer.put(key, request.record);
    writer.put(expiryKey(stampMs, request.id), new Uint8Array(0));
    written++;
  }
  return written;
}

const ageField = new TextEncoder().encode('"ageMs"');

/**
 * An import record (JSON, src/base/namespace-import.ts) with the records of its requests that
 * carry `ageMs` re-stamped into this cell's dedup clock: stamp = clockMs - ageMs, the field then
 * dropped. Done by the member taking the import, before it proposes it, so every replica applies
 * the same bytes (an older member taking it proposes it as it came: the source's stamps, as before).
 * `clockMs` is that member's applied clock, at most the clock the import applies at (the clock
 * only moves forward), so every stamp here stays at or below this cell's clock: a later move's
 * listing from the newest stamp it copied misses no record applied after. Kept as the source's
 * stamp were: records stamped by another cell's clock, which may run hours ahead or behind
 * (it advances only with that cell's own entries), expired at once here or outlived the window,
 * and one ahead of this cell's clock hid every later record from a listing that started at it.
 */
export function restampImportRequests(record: Uint8Array, clockMs: number): Uint8Array {
  if (clockMs <= 0 || Buffer.from(record.buffer, record.byteOffset, record.byteLength).indexOf(ageField) < 0) return record;
  let raw: { requests?: unknown };
  try {
    raw = JSON.parse(new TextDecoder().decode(record)) as { requests?: unknown };
  } catch {
    throw new InvalidArgumentError('an import record is JSON');
  }
  if (!Array.isArray(raw.requests)) return record;
  raw.requests = raw.requests.map((request: unknown) => {
    if (typeof request !== 'object' || request === null || !('ageMs' in request)) return request;
    const { ageMs, ...rest } = request as { ageMs: unknown; record?: unknown };
    if (typeof ageMs !== 'number' || !Number.isSafeInteger(ageMs) || ageMs < 0) throw new InvalidArgumentError('an imported request\'s ageMs is a non-negative integer');
    if (typeof rest.record !== 'string') throw new InvalidArgumentError('an imported request is {id, record} in base64');
    const bytes = new Uint8Array(Buffer.from(rest.record, 'base64'));
    try {
      decodeDedupRecord(bytes);
    } catch {
      throw new InvalidArgumentError('an imported request record does not decode');
    }
    return { ...rest, record: Buffer.from(restampDedupRecord(bytes, Math.max(0, clockMs - ageMs))).toString('base64') };
  });
  return new TextEncoder().encode(JSON.stringify(raw));
}
