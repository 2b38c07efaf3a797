// The fencing epoch (docs/design/restore.md): revisions of epoch e are the integers in
// [e * 2^40, (e + 1) * 2^40). A store never issues a revision outside its epoch (the apply of a
// command that would is refused, on every member alike), and a restore starts the new cell at
// epoch e + 1, so every revision (lock token, election term) the restored cell issues is above
// every one the old cell issued, also after the backup, with no number an operator guesses.
import { assert } from '../base/assert.js';
import { UnavailableError } from '../base/errors.js';

/** 2^40 revisions per epoch (~1.1e12: 127 days at 100,000 writes/s); 8,191 epochs below 2^53. */
export const epochRevisions = 2 ** 40;
/** The largest epoch whose every revision is an exact JavaScript integer (and an etcd int64). */
export const epochMax = Math.floor(Number.MAX_SAFE_INTEGER / epochRevisions) - 1;
/** From this share of an epoch's revisions on, the node reports it (metric and alarm). */
export const epochWarnFraction = 0.9;

/** The first revision of epoch `epoch`: a restored cell's revision and compact revision. */
export function epochFloor(epoch: number): number {
  assert(Number.isSafeInteger(epoch) && epoch >= 0 && epoch <= epochMax, `epoch ${epoch} in range`);
  return epoch * epochRevisions;
}

/** The first revision past epoch `epoch`: never issued by a store of that epoch. */
export function epochEnd(epoch: number): number {
  return epochFloor(epoch) + epochRevisions;
}

/** The epoch a revision belongs to. */
export function epochOfRevision(revision: number): number {
  assert(Number.isSafeInteger(revision) && revision >= 0, 'a revision is a count');
  return Math.floor(revision / epochRevisions);
}

/** How much of the epoch's revisions are used, 0..1 (the metric; an alarm from epochWarnFraction). */
export function epochUsedFraction(epoch: number, revision: number): number {
  return (revision - epochFloor(epoch)) / epochRevisions;
}

/**
 * Refuses, before any write, a command that would take the revision to the epoch's end. Decided
 * from the replicated meta alone, so every member refuses the same entry.
 */
export function checkEpochRoom(epoch: number, revision: number): void {
  if (revision + 1 >= epochEnd(epoch)) {
    throw new UnavailableError("this cell's epoch is spent: restore it into a new epoch", { epoch, revision });
  }
}
