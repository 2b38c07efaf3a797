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
import type { RevisionWriter } from './revision-writer.js';
import type {
  KvReader,
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
      const lease = grantLease(writer, { ttlMs: op.ttlMs, id: op.id }, limits);
      return { type: 'leaseGrant', id: lease.id, ttlMs: lease.ttlMs, revision: revisions.finalRevision };
    }
    case 'leaseGrantBatch': {
      const leases = grantLeases(writer, op.grants, limits).map((lease) => ({ id: lease.id, ttlMs: lease.ttlMs }));
      return { type: 'leaseGrantBatch', leases, revision: revisions.finalRevision };
    }
    case 'leaseRevoke': {
      const lease = requireLease(writer, op.id);
      // Bounded by leaseKeysMax (checked on every attachment).
      const keys = readLeaseKeys(writer, op.id);
      assert(keys.length === lease.keyCount, 'the key count matches the lease index');
      let deleted = 0;
      for (const key of keys) if (revisions.delete(utf8(key), key)) deleted++;
      assert(deleted === keys.length, 'every indexed key was live');
      removeLease(writer, op.id);
      assert(readLease(writer, op.id) === null, 'a revoked lease is gone');
      return { type: 'leaseRevoke', id: op.id, deleted, revision: revisions.finalRevision };
    }
    case 'leaseCheckpoint': {
      const updated = checkpointLeases(writer, op.leases, limits);
      return { type: 'leaseCheckpoint', updated, revision: revisions.finalRevision };
    }
  }
}

/** Before any write of the command: every named lease exists and has room for its new keys. */
export function checkPutLeases(reader: KvReader, puts: readonly PutOp[], limits: MvccLimits): void {
  const attaching = puts
    .filter((put) => put.lease !== undefined && put.lease !== 0)
    .map((put) => ({ keyBytes: utf8(put.key), key: put.key, lease: put.lease as number }));
  if (attaching.length > 0) checkLeaseAttachments(reader, attaching, limits);
}
