// What the content hash covers of a stored entry: its value in the form store format 2 writes.
// Both formats decode to the same state, so two members holding the same state hash alike even
// where one wrote a record in format 1 and the other in format 2 (a store upgraded at another
// index, or one a member rebuilt from the log with the latest format while the others kept
// theirs). A format-2 value is its own form: hashing a format-2 store reads no record twice.
import { canonicalDedupRecord } from './dedup-record.js';
import { parseHistoryKey, revisionIndexSeq, revisionIndexValue, tablePrefix } from './layout.js';
import { canonicalEvent, canonicalRecord, isCompact } from './records.js';
import type { KvEntry } from './types.js';

const prefix = {
  current: tablePrefix.current[0] as number,
  history: tablePrefix.history[0] as number,
  revisionIndex: tablePrefix.revisionIndex[0] as number,
  dedup: tablePrefix.dedup[0] as number,
};

export function contentForm(entry: KvEntry): Uint8Array {
  switch (entry.key[0]) {
    case prefix.current:
      return canonicalRecord(entry.value);
    case prefix.history:
      return isCompact(entry.value) ? entry.value : canonicalEvent(parseHistoryKey(entry.key).revision, entry.value);
    case prefix.revisionIndex:
      return revisionIndexValue(revisionIndexSeq(entry.value), 2);
    case prefix.dedup:
      return canonicalDedupRecord(entry.value);
    default:
      // Lease, members, dedup clock and expiry tables: one format.
      return entry.value;
  }
}
