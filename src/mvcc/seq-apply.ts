// Contender queues for locks and elections, applied in the state machine so that creating an
// entry, reading its place, and granting it are each one committed step: the listing a waiter
// gets is exactly the state at its own revision (nothing can slip between list and watch), and a
// grant re-checks that the contender's key (hence its lease) is still alive.
import { assert } from '../base/assert.js';
import { InvalidArgumentError, LeaseNotFoundError, LockHeldError, LockNotHeldError } from '../base/errors.js';
import { fromUtf8, prefixEnd, utf8 } from './bytes.js';
import { currentKey, currentRange } from './layout.js';
import { checkPutLeases } from './lease-apply.js';
import { checkPutQuotas } from './tenant-usage.js';
import { readLease } from './lease-state.js';
import { decodeRecord } from './records.js';
import type { RevisionWriter } from './revision-writer.js';
import { seqSuffix, validateSeqKey } from './validate.js';
import type {
  KeyValue,
  KvRange,
  KvReader,
  MvccBugs,
  MvccLimits,
  SeqCheckOp,
  SeqCreateOp,
  SeqPosition,
  SeqReleaseOp,
  SeqCreateResult,
  SeqCheckResult,
  SeqReleaseResult,
} from './types.js';

export function applySeqCommand(
  revisions: RevisionWriter,
  op: SeqCreateOp | SeqCheckOp | SeqReleaseOp,
  limits: MvccLimits,
  bugs: MvccBugs = {},
): SeqCreateResult | SeqCheckResult | SeqReleaseResult {
  switch (op.type) {
    case 'seqCreate':
      return applyCreate(revisions, op, limits, bugs);
    case 'seqCheck':
      return { type: 'seqCheck', ...position(revisions.writer, op.prefix, ownKey(revisions.writer, op), revisions.baseRevision) };
    case 'seqRelease':
      return applyRelease(revisions, op, limits);
  }
}

function applyCreate(revisions: RevisionWriter, op: SeqCreateOp, limits: MvccLimits, bugs: MvccBugs): SeqCreateResult {
  const key = `${op.prefix}${seqSuffix(revisions.revision)}`;
  // The prefix was checked for 12 digits of room; the wide form of later epochs takes 5 more.
  if (utf8(key).length > limits.keyBytesMax) {
    throw new InvalidArgumentError('a queue prefix ends with "/" and leaves room for the sequence', { prefix: op.prefix });
  }
  if (op.ifEmpty) {
    const owner = firstUnder(revisions.writer, op.prefix);
    if (owner !== null) {
      throw new LockHeldError(`${op.prefix} is held by ${owner.key}`, { holder: holderDetails(owner) });
    }
  }
  // Before the first write: the lease exists and has room (lease_not_found / quota_exceeded).
  // (Test-only bug lockWithoutLeaseCheck: skipped, so a dead lease can queue and be granted.)
  const put = { type: 'put' as const, key, value: op.value, lease: op.lease };
  if (bugs.lockWithoutLeaseCheck !== true) checkPutLeases(revisions.writer, [put], limits);
  // A contender's key under a tenant's prefix is that tenant's key (and lease): its quotas hold (#28).
  checkPutQuotas(revisions.writer, revisions.tenantTable, [put], null);
  const kv = revisions.put(utf8(key), { key, value: op.value, lease: op.lease });
  assert(kv.version === 1 && kv.createRevision === revisions.revision, 'a contender key is new');
  return { type: 'seqCreate', ...position(revisions.writer, op.prefix, kv, revisions.revision) };
}

function applyRelease(revisions: RevisionWriter, op: SeqReleaseOp, limits: MvccLimits): SeqReleaseResult {
  validateSeqKey(op.prefix, op.key, limits);
  const owner = firstUnder(revisions.writer, op.prefix);
  if (owner === null || owner.key !== op.key) {
    throw new LockNotHeldError(`${op.key} does not hold ${op.prefix}`, {
      holder: owner === null ? null : holderDetails(owner),
    });
  }
  assert(revisions.delete(utf8(op.key), op.key), 'the owner key was live');
  return { type: 'seqRelease', revision: revisions.finalRevision };
}

/** The contender's live key, or why it is gone. */
function ownKey(reader: KvReader, op: SeqCheckOp): KeyValue {
  const stored = reader.get(currentKey(utf8(op.key)));
  if (stored !== undefined) {
    const kv = decodeRecord(op.key, stored);
    if (kv.lease === op.lease) {
      // A live key implies a live lease: a revocation deletes its keys in the same step.
      assert(readLease(reader, op.lease) !== null, 'a key attached to a lease outlives it');
      return kv;
    }
  }
  if (readLease(reader, op.lease) === null) {
    throw new LeaseNotFoundError(`lease ${op.lease} ended before ${op.key} was granted`, { lease: op.lease });
  }
  throw new LockNotHeldError(`${op.key} is no longer queued (deleted)`, { key: op.key });
}

function position(reader: KvReader, prefix: string, kv: KeyValue, revision: number): SeqPosition {
  // Keys below the contender's own: the first owns, the last is its predecessor. Two seeks (one
  // forward, one back from the contender's key), whatever the queue's length.
  const below = currentRange({ start: utf8(prefix), end: utf8(kv.key) });
  const owner = firstIn(reader, below);
  if (owner === null) return { revision, kv, owner: kv, predecessor: null };
  const predecessor = firstIn(reader, { ...below, reverse: true });
  assert(predecessor !== null, 'a range with a first key has a last one');
  return { revision, kv, owner, predecessor };
}

function firstUnder(reader: KvReader, prefix: string): KeyValue | null {
  const bytes = utf8(prefix);
  return firstIn(reader, currentRange({ start: bytes, end: prefixEnd(bytes) }));
}

/** The first entry of a range of the current table (the last one for a reverse range). */
function firstIn(reader: KvReader, range: KvRange): KeyValue | null {
  for (const entry of reader.range(range)) {
    return decodeRecord(fromUtf8(entry.key.subarray(1)), entry.value);
  }
  return null;
}

/** JSON-safe (errors are stored for Request-ID retries): the value as UTF-8 text. */
export function holderDetails(kv: KeyValue): Record<string, unknown> {
  return { key: kv.key, fencingToken: kv.createRevision, lease: kv.lease, value: fromUtf8(kv.value) };
}
