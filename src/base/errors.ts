// Every error a user can see is a BatonError with a stable code from api.md; its HTTP status and
// gRPC status come from this one table (errorTable, never from parsing messages), which
// docs/api/README.md lists row for row (test/unit/base/error-table.test.ts checks both ways).
// Anything else is a bug. A case that needs its own etcd answer inside one code carries a stable
// `reason` detail (ErrorReason), never a message to match.

/**
 * gRPC status numbers (grpc/codes, the wire values): base imports no gRPC library. The facade
 * (src/api/grpc/errors.ts) maps through errorTable.grpc; the names are for readers and the docs.
 */
export const grpcStatusNames = {
  0: 'OK', 1: 'CANCELLED', 2: 'UNKNOWN', 3: 'INVALID_ARGUMENT', 4: 'DEADLINE_EXCEEDED', 5: 'NOT_FOUND',
  6: 'ALREADY_EXISTS', 7: 'PERMISSION_DENIED', 8: 'RESOURCE_EXHAUSTED', 9: 'FAILED_PRECONDITION', 10: 'ABORTED',
  11: 'OUT_OF_RANGE', 12: 'UNIMPLEMENTED', 13: 'INTERNAL', 14: 'UNAVAILABLE', 15: 'DATA_LOSS', 16: 'UNAUTHENTICATED',
} as const;
export type GrpcStatusNumber = keyof typeof grpcStatusNames;

interface ErrorRow {
  /** null: never an HTTP answer (it ends a stream). */
  readonly http: number | null;
  readonly grpc: GrpcStatusNumber;
}

/** The one error table: every code of api.md (and docs/api/README.md), its HTTP and gRPC status. */
export const errorTable = {
  invalid_argument: { http: 400, grpc: 3 /* INVALID_ARGUMENT */ },
  key_not_found: { http: 404, grpc: 5 /* NOT_FOUND */ },
  lease_not_found: { http: 404, grpc: 5 /* NOT_FOUND */ },
  lock_not_held: { http: 409, grpc: 9 /* FAILED_PRECONDITION */ },
  lock_held: { http: 409, grpc: 9 /* FAILED_PRECONDITION */ },
  request_id_reused: { http: 409, grpc: 9 /* FAILED_PRECONDITION */ },
  compacted: { http: 410, grpc: 11 /* OUT_OF_RANGE */ },
  precondition_failed: { http: 412, grpc: 9 /* FAILED_PRECONDITION */ },
  unauthenticated: { http: 401, grpc: 16 /* UNAUTHENTICATED */ },
  permission_denied: { http: 403, grpc: 7 /* PERMISSION_DENIED */ },
  too_large: { http: 413, grpc: 3 /* INVALID_ARGUMENT, as etcd's "request is too large" */ },
  quota_exceeded: { http: 429, grpc: 8 /* RESOURCE_EXHAUSTED */ },
  overloaded: { http: 429, grpc: 8 /* RESOURCE_EXHAUSTED */ },
  unavailable: { http: 503, grpc: 14 /* UNAVAILABLE */ },
  timeout: { http: 504, grpc: 14 /* UNAVAILABLE, as etcd's "request timed out" (clients retry it) */ },
  slow_consumer: { http: null, grpc: 8 /* RESOURCE_EXHAUSTED */ },
  // Not UNAVAILABLE: etcd clients retry that on the cell's other members, which refuse it too.
  // The request cannot succeed on this cell; the details say which cell owns the namespace.
  wrong_cell: { http: 421, grpc: 9 /* FAILED_PRECONDITION */ },
  cross_cell: { http: 400, grpc: 3 /* INVALID_ARGUMENT */ },
} as const satisfies Record<string, ErrorRow>;

export type ErrorCode = keyof typeof errorTable;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(errorTable, code);
}

/** A code from a newer server that this build does not know (read off the wire only). */
export type UnknownCode = string & { readonly unknownCode: true };

/** The one place a code read off the wire (an answer, a forwarded error) becomes a code. */
export function wireCode(code: string): ErrorCode | UnknownCode {
  return isErrorCode(code) ? code : (code as UnknownCode);
}

/**
 * Stable sub-cases of a code, in details `reason`, for answers that differ by case (the etcd
 * facade answers a future revision OUT_OF_RANGE, too many txn operations with etcd's own words).
 */
export type ErrorReason = 'future_revision' | 'too_many_operations';

export abstract class BatonError extends Error {
  abstract readonly code: ErrorCode | UnknownCode;
  readonly retryable: boolean = false;
  readonly details: Readonly<Record<string, unknown>>;
  constructor(message: string, details: Record<string, unknown> = {}, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.details = details;
  }
}

export class InvalidArgumentError extends BatonError {
  readonly code = 'invalid_argument';
}
export class KeyNotFoundError extends BatonError {
  readonly code = 'key_not_found';
}
export class LeaseNotFoundError extends BatonError {
  readonly code = 'lease_not_found';
}
export class LockNotHeldError extends BatonError {
  readonly code = 'lock_not_held';
}
export class LockHeldError extends BatonError {
  readonly code = 'lock_held';
}
export class CompactedError extends BatonError {
  readonly code = 'compacted';
  constructor(compactRevision: number, message = `revisions up to ${compactRevision} are compacted`, details: Record<string, unknown> = {}) {
    super(message, { ...details, compactRevision });
  }
}
export class FutureRevisionError extends BatonError {
  readonly code = 'invalid_argument';
  constructor(revision: number, currentRevision: number) {
    super(`revision ${revision} is in the future (current ${currentRevision})`, {
      revision,
      currentRevision,
      reason: 'future_revision' satisfies ErrorReason,
    });
  }
}
export class PreconditionFailedError extends BatonError {
  readonly code = 'precondition_failed';
}
/** Authorization refused the request (docs/design/authorization.md); never says whether a key exists. */
export class PermissionDeniedError extends BatonError {
  readonly code = 'permission_denied';
}
/** A user token that does not verify (expired, forged, or its user changed its password or is gone). */
export class UnauthenticatedError extends BatonError {
  readonly code = 'unauthenticated';
}
export class TooLargeError extends BatonError {
  readonly code = 'too_large';
  constructor(what: string, size: number, limit: number, reason?: ErrorReason) {
    super(`${what} is ${size}, over the limit of ${limit}`, { limit, size, ...(reason !== undefined ? { reason } : {}) });
  }
}
export class QuotaExceededError extends BatonError {
  readonly code = 'quota_exceeded';
  override readonly retryable = true;
  /** Set by a node's tenant admission (#28): the Retry-After it computed, with jitter; else the edge's own. */
  retryAfterSeconds: number | undefined = undefined;
}
export class OverloadedError extends BatonError {
  readonly code = 'overloaded';
  override readonly retryable = true;
  /** Set where the node knows when to come back (the session gate's staggered guidance); else the edge's own. */
  retryAfterSeconds: number | undefined = undefined;
}
export class UnavailableError extends BatonError {
  readonly code = 'unavailable';
  override readonly retryable = true;
}
export class TimeoutError extends BatonError {
  readonly code = 'timeout';
  override readonly retryable = true;
}
/**
 * A Request-ID seen within the dedup window on a different request (another kind, key or body):
 * a client bug. Only an identical retry replays the first answer; anything else is refused and
 * changes nothing. Details name the first request (`kind`, `key`) and this one (`attempted`).
 */
export class RequestIdReusedError extends BatonError {
  readonly code = 'request_id_reused';
  constructor(
    requestId: string,
    first: { kind: string; key: string | null },
    again: { kind: string; key: string | null },
  ) {
    const what = first.key === null ? first.kind : `${first.kind} of key ${first.key}`;
    super(`Request-ID "${requestId}" was already used for a different request (a ${what}): use a new Request-ID`, {
      requestId,
      kind: first.kind,
      key: first.key,
      attempted: { kind: again.kind, key: again.key },
    });
  }
}
export class SlowConsumerError extends BatonError {
  readonly code = 'slow_consumer';
}
/** Where a namespace lives, as a refusing cell knows it (docs/design/cells.md). */
export interface NamespaceOwner {
  readonly namespace: string;
  /** '' when the cell map names no cell for it. */
  readonly cell: string;
  readonly epoch: number;
  /** The owning cell's members' client URLs. */
  readonly endpoints: readonly string[];
}
/** This cell does not own the request's namespace: the details say who does (one round trip). */
export class WrongCellError extends BatonError {
  readonly code = 'wrong_cell';
  constructor(owner: NamespaceOwner) {
    super(`namespace ${owner.namespace} is owned by ${owner.cell === '' ? 'no cell' : `cell ${owner.cell}`} (routing epoch ${owner.epoch}), not this cell`, {
      namespace: owner.namespace, cell: owner.cell, epoch: owner.epoch, endpoints: [...owner.endpoints],
    });
  }
}
/** A txn, lock or range read whose keys are in namespaces owned by different cells. */
export class CrossCellError extends BatonError {
  readonly code = 'cross_cell';
  constructor(namespaces: readonly { namespace: string; cell: string }[]) {
    super(`the request spans namespaces in different cells (${namespaces.map((n) => `${n.namespace} on ${n.cell}`).join(', ')}): split it per cell`, {
      namespaces: namespaces.map((n) => ({ namespace: n.namespace, cell: n.cell })),
    });
  }
}

/** Damage found in a file on disk: the node refuses to start and names the file and offset. */
export class CorruptFileError extends Error {
  override name = 'CorruptFileError';
  constructor(
    readonly path: string,
    readonly offset: number,
    readonly reason: string,
  ) {
    super(`corrupt file ${path} at byte offset ${offset}: ${reason}`);
  }
}

/** The HTTP status of every code that can be an HTTP answer (derived from errorTable). */
export const httpStatusByCode: Readonly<Partial<Record<ErrorCode, number>>> = Object.fromEntries(
  Object.entries(errorTable).flatMap(([code, row]) => (row.http === null ? [] : [[code, row.http]])),
);

/** The HTTP status for an error code; null for a code that is never an HTTP answer or unknown. */
export function httpStatusOf(code: string): number | null {
  return isErrorCode(code) ? errorTable[code].http : null;
}
