// Baton's typed errors as etcd's gRPC statuses. etcd clients branch on the code and, for some
// errors, on the exact message (Go's rpctypes, etcd3's error table), so those use etcd's words.
import { status, type StatusObject } from '@grpc/grpc-js';
import { BatonError, FutureRevisionError } from '../../base/errors.js';

export const etcdMessages = {
  compacted: 'etcdserver: mvcc: required revision has been compacted',
  futureRevision: 'etcdserver: mvcc: required revision is a future revision',
  leaseNotFound: 'etcdserver: requested lease not found',
  tooManyOps: 'etcdserver: too many operations in txn request',
  tooLarge: 'etcdserver: request is too large',
  leaseTtlTooLarge: 'etcdserver: too large lease TTL',
  keyNotFound: 'etcdserver: key not found',
  valueProvided: 'etcdserver: value is provided',
  leaseProvided: 'etcdserver: lease is provided',
  notLeader: 'etcdserver: election: not leader',
  noLeader: 'etcdserver: election: no leader',
  timeout: 'etcdserver: request timed out',
} as const;

/** A status the facade raises itself (etcd's own error for a case Baton has no type for). */
export class GrpcStatusError extends Error {
  constructor(
    readonly code: status,
    readonly details: string,
  ) {
    super(details);
  }
}

export type GrpcError = Pick<StatusObject, 'code' | 'details'> & { message: string };

function make(code: status, details: string): GrpcError {
  return { code, details, message: details };
}

export function hasCode(error: unknown, code: string): error is BatonError {
  return error instanceof BatonError && error.code === code;
}

/** The gRPC status for any error a handler throws; unexpected errors are INTERNAL and logged. */
export function toGrpcError(error: unknown, logError: (error: unknown) => void): GrpcError {
  if (error instanceof GrpcStatusError) return make(error.code, error.details);
  // By code, not class: an error a follower passes on from the leader keeps only its code.
  if (hasCode(error, 'compacted')) return make(status.OUT_OF_RANGE, etcdMessages.compacted);
  if (error instanceof FutureRevisionError || (hasCode(error, 'invalid_argument') && 'currentRevision' in error.details)) {
    return make(status.OUT_OF_RANGE, etcdMessages.futureRevision);
  }
  if (hasCode(error, 'lease_not_found')) return make(status.NOT_FOUND, etcdMessages.leaseNotFound);
  if (hasCode(error, 'too_large')) {
    if (error.message.startsWith('txn operations')) return make(status.INVALID_ARGUMENT, etcdMessages.tooManyOps);
    return make(status.INVALID_ARGUMENT, `${etcdMessages.tooLarge} (${error.message})`);
  }
  if (error instanceof BatonError) {
    const text = error.message.startsWith('etcdserver:') ? error.message : `etcdserver: ${error.message}`;
    switch (error.code) {
      case 'invalid_argument':
        return make(status.INVALID_ARGUMENT, text);
      case 'key_not_found':
        return make(status.NOT_FOUND, text);
      case 'lock_held':
      case 'lock_not_held':
      case 'precondition_failed':
      case 'request_id_reused':
        return make(status.FAILED_PRECONDITION, text);
      case 'quota_exceeded':
      case 'overloaded':
        return make(status.RESOURCE_EXHAUSTED, text);
      case 'timeout':
        return make(status.UNAVAILABLE, `${etcdMessages.timeout} (${error.message})`);
      case 'unavailable':
        return make(status.UNAVAILABLE, text);
      default:
        return make(status.UNKNOWN, text);
    }
  }
  logError(error);
  return make(status.INTERNAL, `etcdserver: internal error: ${(error as Error)?.message ?? String(error)}`);
}
