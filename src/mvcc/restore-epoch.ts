// A backup carried into a new cell at the next fencing epoch (docs/design/restore.md). Pure: the
// same snapshot stream and grace give the same entries, so every member restored from one file
// holds the same bytes (and the same content hash). What it does to the stream's entries:
//  - meta: epoch e -> e + 1; revision and compact revision = the floor (e + 1) * 2^40; applied
//    index and term 0 (the new cell's log starts empty); store format and dedup clock kept;
//  - every live key ('k') and its lease index ('l') kept as is: create/mod revision and version
//    from the backup, all below the floor;
//  - history and the revision index dropped: they belong to the old cell's timeline, and a read or
//    watch below the floor answers `compacted`;
//  - dedup records and their index and clocks dropped: an answer of the old cell is not one of
//    this cell (a retried request is applied anew, at a revision above the floor);
//  - the member table dropped: the new cell's first configuration writes its own;
//  - leases kept, each remaining TTL plus the grace (lease-state.ts); the policy record kept.
import { assert } from '../base/assert.js';
import { epochEnd, epochFloor, epochMax } from './epoch.js';
import { metaKey, tablePrefix } from './layout.js';
import { withRestoreGrace } from './lease-state.js';
import { membersKey } from './members-record.js';
import { decodeMeta, encodeMeta } from './records.js';
import type { KvEntry, MvccMeta } from './types.js';

export interface RestoreEpochOptions {
  /** Added to every lease's remaining TTL (one election timeout of the new cell). */
  readonly leaseGraceMs: number;
  /** Called once with the backup's meta and the new cell's, before any other entry is yielded. */
  readonly onMeta?: (old: MvccMeta, restored: MvccMeta) => void;
}

const dropped = new Set<number>([
  tablePrefix.history[0] as number,
  tablePrefix.revisionIndex[0] as number,
  tablePrefix.dedup[0] as number,
  tablePrefix.expiry[0] as number,
  tablePrefix.dedupSource[0] as number,
]);

/** The meta of the restored cell from the backup's. */
export function restoredMeta(old: MvccMeta): MvccMeta {
  assert(old.epoch < epochMax, `epoch ${old.epoch} is the last one that fits 2^53`);
  assert(old.revision < epochEnd(old.epoch), 'a backup holds revisions of its epoch');
  const floor = epochFloor(old.epoch + 1);
  return { ...old, appliedIndex: 0, appliedTerm: 0, revision: floor, compactRevision: floor, epoch: old.epoch + 1 };
}

/** The entries of the restored store, from the backup's decoded stream (meta first). */
export function* restoreIntoNextEpoch(entries: Iterable<KvEntry>, options: RestoreEpochOptions): Generator<KvEntry> {
  assert(Number.isSafeInteger(options.leaseGraceMs) && options.leaseGraceMs >= 0, 'lease grace is a count');
  let first = true;
  for (const entry of entries) {
    if (first) {
      first = false;
      assert(entry.key.length === 1 && entry.key[0] === metaKey[0], 'a snapshot starts with meta');
      const old = decodeMeta(entry.value);
      const next = restoredMeta(old);
      options.onMeta?.(old, next);
      yield { key: entry.key, value: encodeMeta(next) };
      continue;
    }
    const table = entry.key[0] as number;
    if (dropped.has(table)) continue;
    if (entry.key.length === 1 && table === membersKey[0]) continue;
    yield { key: entry.key, value: withRestoreGrace(entry.key, entry.value, options.leaseGraceMs) };
  }
  assert(!first, 'a snapshot has a meta record');
}
