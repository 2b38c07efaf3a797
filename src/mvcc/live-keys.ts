// The number of live keys (the current table 'k'), as etcd's etcd_debugging_mvcc_keys_total.
// The engine is one ordered key space, so no count comes for free: the store counts once (a scan
// of the current table's keys, no values) the first time it is asked after it opened or installed
// a snapshot, and from then on moves the count by what each applied batch created and deleted.
//
// Why memory and not a record beside the tables: a record would change the replicated bytes
// (snapshots, content hash) and need a store-format step for members of older versions; the
// count follows from the current table alone, so recounting it is always right. Exactness rests
// on one rule: every write that creates or removes a current-table record counts it where it
// writes (revision-writer.ts for puts, deletes, txns, delete-ranges, lease revocations and
// sequence commands; import-keys.ts for a move's imports and an aborted move's clear), into the
// batch's tally, which the store adds only once the batch's transaction committed.
import { tableRange, tablePrefix } from './layout.js';
import type { KvReader } from './types.js';

/** Live keys created minus deleted by the writes of one batch so far. */
export interface LiveKeyTally {
  delta: number;
}

/** A tally nobody reads (callers outside the store's batches). */
export function noTally(): LiveKeyTally {
  return { delta: 0 };
}

/** One scan of the current table's keys. */
export function countLiveKeys(reader: KvReader): number {
  const range = tableRange(tablePrefix.current);
  if (reader.count !== undefined) return reader.count(range);
  let count = 0;
  for (const _entry of reader.range(range)) count++;
  return count;
}
