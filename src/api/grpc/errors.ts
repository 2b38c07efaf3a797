// Baton's typed errors as etcd's gRPC statuses: the status comes from the one error table
// (src/base/errors.ts, errorTable.grpc), never from a message. etcd clients branch on the code
// and, for some errors, on the exact message (Go's rpctypes, etcd3's error table), so those
// answers use etcd's words.
import { status, type StatusObject } from '@grpc/grpc-js';
import { BatonError, errorTable, isErrorCode, type ErrorCode, type ErrorReason } from '../../base/errors.js';

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
  // etcd's election server returns concurrency's errors as they are: UNKNOWN, no "etcdserver: ".
  notLeader: 'election: not leader',
  noLeader: 'election: no leader',
  timeout: 'etcdserver: request timed out',
  tooManyRequests: 'etcdserver: too many requests',
} as const;

/** Quotas a node decides on admission (src/base/tenant-admission.ts), answered as etcd's rate limit. */
const admissionQuotas = new Set(['reads_per_second', 'writes_per_second', 'concurrent_requests', 'watches', 'watch_bytes', 'events_per_second']);

/** A status the facade raises itself (etcd's own error for a case Baton has no type for). */
export class GrpcStatusError extends Error {
  constructor(
    readonly code: status,
    readonly details: string,
  ) {
    super(details);
  }
}

export type GrpcError = Pick<StatusObject, 'code' | 'details'> & {
  message: string;
  retryAfterSeconds?: number;
  trailers?: readonly (readonly [string, string])[];
};

/**
 * The trailer that carries wrong_cell's details (namespace, owner cell, epoch, endpoints) as JSON:
 * a router corrects its cell map from it and retries at once (docs/design/cells.md), never by
 * parsing the message. `-bin`: gRPC clients base64-decode it.
 */
export const wrongCellTrailer = 'baton-wrong-cell-bin';

function make(code: status, details: string): GrpcError {
  return { code, details, message: details };
}

/** The node's Retry-After (tenants' rates, the session gate), carried to the trailers and the gateway's header. */
function withRetryAfter(answer: GrpcError, error: BatonError): GrpcError {
  const seconds = (error as { retryAfterSeconds?: unknown }).retryAfterSeconds;
  return typeof seconds === 'number' ? { ...answer, retryAfterSeconds: seconds } : answer;
}

export function hasCode(error: unknown, code: ErrorCode): error is BatonError {
  return error instanceof BatonError && error.code === code;
}

/**
 * The gRPC status for any error a handler throws: by code through the one table (errorTable.grpc),
 * by `reason` where one code needs two etcd answers; unexpected errors are INTERNAL and logged.
 * By code, not class: an error a follower passes on from the leader keeps only code and details.
 */
export function toGrpcError(error: unknown, logError: (error: unknown) => void): GrpcError {
  if (error instanceof GrpcStatusError) return make(error.code, error.details);
  if (!(error instanceof BatonError)) {
    logError(error);
    return make(status.INTERNAL, `etcdserver: internal error: ${(error as Error)?.message ?? String(error)}`);
  }
  if (!isErrorCode(error.code)) return make(status.UNKNOWN, etcdText(error));
  const reason = error.details['reason'];
  if (reason === ('future_revision' satisfies ErrorReason)) return make(status.OUT_OF_RANGE, etcdMessages.futureRevision);
  if (error.code === 'wrong_cell') {
    const details = Buffer.from(JSON.stringify(error.details)).toString('base64');
    return { ...make(errorTable[error.code].grpc, etcdText(error)), trailers: [[wrongCellTrailer, details]] };
  }
  return withRetryAfter(make(errorTable[error.code].grpc, etcdText(error)), error);
}

/** etcd's own words where etcd clients match them (Go's rpctypes, etcd3's table), else Baton's. */
function etcdText(error: BatonError): string {
  switch (error.code) {
    case 'compacted':
      return etcdMessages.compacted;
    case 'lease_not_found':
      return etcdMessages.leaseNotFound;
    case 'too_large':
      if (error.details['reason'] === ('too_many_operations' satisfies ErrorReason)) return etcdMessages.tooManyOps;
      return `${etcdMessages.tooLarge} (${error.message})`;
    case 'permission_denied':
      return 'etcdserver: permission denied';
    case 'unauthenticated':
      return 'etcdserver: invalid auth token';
    case 'timeout':
      return `${etcdMessages.timeout} (${error.message})`;
    case 'quota_exceeded':
      // A tenant's admission quota (#28): etcd's rate-limit words, then which tenant and quota.
      if (admissionQuotas.has(String(error.details['quota']))) return `${etcdMessages.tooManyRequests} (${error.message})`;
      return `etcdserver: ${error.message}`;
    default:
      return error.message.startsWith('etcdserver:') ? error.message : `etcdserver: ${error.message}`;
  }
}
