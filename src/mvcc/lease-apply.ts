// Applying the lease commands (grant, revoke, checkpoint) and judging puts that name a lease.
// A revocation deletes every attached key as ONE revision and then the lease record, in the same
// storage transaction, so no reader ever sees a revoked lease that still holds keys. Grants and
// checkpoints change no key, so they leave the revision where it was.
import { assert } from '../base/assert.js';
import { utf8 } from './bytes.js';
import { readLeaseKeys } from './read.js';
import {
  checkLeaseAttachments,
  checkpointLeases,
  grantLease,
  grantLeases,
  readLease,
  removeLease,
  requireLease,
} from './lease-state.js';
import { RevisionWriter } from './revision-writer.js';
import type { LiveKeyTally } from './live-keys.js';
import type { TenantRecord } from '../base/tenants.js';
import type { LeaseRecord } from './lease-state.js';
import type {
  KvReader,
  KvWriter,
  LeaseRevokeBatchOp,
  LeaseRevokeBatchResult,
  StoreFormat,
  LeaseCheckpointOp,
  LeaseGrantBatchOp,
  LeaseGrantOp,
  LeaseRevokeOp,
  MvccLimits,
  PutOp,
  CommandResult,
} from './types.js';

export function applyLeaseCommand(
  revisions: RevisionWriter,
  op: LeaseGrantOp | LeaseGrantBatchOp | LeaseRevokeOp | LeaseCheckpointOp,
  limits: MvccLimits,
): CommandResult {
  const writer = revisions.writer;
  switch (op.type) {
    case 'leaseGrant': {
      const lease = grantLease(writer, { ttlMs: op.ttlMs, id: op.id }, limits, revisions.storeFormat);
      return { type: 'leaseGrant', id: lease.id, ttlMs: lease.ttlMs, revision: revisions.finalRevision };
    }
    case 'leaseGrantBatch': {
      const leases = grantLeases(writer, op.grants, limits, revisions.storeFormat).map((lease) => ({ id: lease.id, ttlMs: lease.ttlMs }));
      return { type: 'leaseGrantBatch', leases, revision: revisions.finalRevision };
    }
    case 'leaseRevoke': {
      const deleted = revokeLease(revisions, op.id, requireLease(writer, op.id));
      return { type: 'leaseRevoke', id: op.id, deleted, revision: revisions.finalRevision };
    }
    case 'leaseCheckpoint': {
      const updated = checkpointLeases(writer, op.leases, limits);
      return { type: 'leaseCheckpoint', updated, revision: revisions.finalRevision };
    }
  }
}

/** Deletes the lease's keys (at the writer's revision) and then its record; returns how many keys. */
function revokeLease(revisions: RevisionWriter, id: number, lease: LeaseRecord): number {
  const writer = revisions.writer;
  // Bounded by leaseKeysMax (checked on every attachment).
  const keys = readLeaseKeys(writer, id);
  assert(keys.length === lease.keyCount, 'the key count matches the lease index');
  let deleted = 0;
  for (const key of keys) if (revisions.delete(utf8(key), key)) deleted++;
  assert(deleted === keys.length, 'every indexed key was live');
  removeLease(writer, id);
  assert(readLease(writer, id) === null, 'a revoked lease is gone');
  return deleted;
}

/**
 * Op 21, the leader's expiry of many leases in one entry. Each lease still present is revoked as
 * leaseRevoke revokes it, at a revision of its own (so a watcher or a lock queue sees the same
 * events as from one entry per lease); a lease already gone (a client or an earlier entry revoked
 * it first) is skipped. The leader bounds the keys one entry deletes (src/lease/lease-config.ts).
 */
export function applyLeaseRevokeBatch(
  writer: KvWriter,
  baseRevision: number,
  format: StoreFormat,
  tenants: readonly TenantRecord[],
  op: LeaseRevokeBatchOp,
  liveKeys?: LiveKeyTally,
): LeaseRevokeBatchResult {
  let revision = baseRevision;
  const leases: { id: number; deleted: number; revision: number }[] = [];
  for (const id of op.ids) {
    const lease = readLease(writer, id);
    if (lease === null) continue;
    const revisions = new RevisionWriter(writer, revision, format, tenants, liveKeys);
    const deleted = revokeLease(revisions, id, lease);
    revision = revisions.finalRevision;
    leases.push({ id, deleted, revision });
  }
  return { type: 'leaseRevokeBatch', leases, revision };
}

/** Before any write of the command: every named lease exists and has room for its new keys. */
export function checkPutLeases(reader: KvReader, puts: readonly PutOp[], limits: MvccLimits): void {
  const attaching = puts
    .filter((put) => put.lease !== undefined && put.lease !== 0)
    .map((put) => ({ keyBytes: utf8(put.key), key: put.key, lease: put.lease as number }));
  if (attaching.length > 0) checkLeaseAttachments(reader, attaching, limits);
}
