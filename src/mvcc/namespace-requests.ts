// Request-IDs move with their namespace (docs/design/cells.md, "Request-IDs across a move"). The
// dedup table is the cell's, keyed by Request-ID, not by namespace; a record names its namespace
// only through its request's fingerprint (the first key a keyed request names). The source lists
// the records of a namespace from the expiry index (ordered by stamp, so "since T" is one range
// scan, bounded per call); the destination's import writes them into its own table, keeping a
// record it already has (the first outcome wins, as for any Request-ID). A retry of a request
// the source applied before the fence then finds its outcome on the destination.
import { decodeDedupRecord } from './dedup-record.js';
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
  readonly requests: (NamespaceRequest & { readonly stampMs: number })[];
  /** Where the next page starts (the last expiry key scanned), or null: the index was read to its end. */
  readonly next: Uint8Array | null;
}

/**
 * Records whose request named a key under `prefix`, with stamps from `sinceMs` on, in stamp order,
 * from after `after` (a page's `next`); at most `scanMax` expiry entries read per call.
 */
export function namespaceRequests(reader: KvReader, prefix: string, options: { sinceMs: number; after: Uint8Array | null; scanMax: number }): NamespaceRequestPage {
  const requests: (NamespaceRequest & { stampMs: number })[] = [];
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
    if (key !== null && key.startsWith(prefix)) requests.push({ id, record: stored.slice(), stampMs: proposedAtMs });
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
