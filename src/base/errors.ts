// Every error a user can see is a BatonError with a stable code from api.md; the HTTP status and
// gRPC code are derived from this one table (never by parsing messages). Anything else is a bug.
export abstract class BatonError extends Error {
  abstract readonly code: string;
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
  constructor(compactRevision: number) {
    super(`revisions up to ${compactRevision} are compacted`, { compactRevision });
  }
}
export class FutureRevisionError extends BatonError {
  readonly code = 'invalid_argument';
  constructor(revision: number, currentRevision: number) {
    super(`revision ${revision} is in the future (current ${currentRevision})`, {
      revision,
      currentRevision,
    });
  }
}
export class PreconditionFailedError extends BatonError {
  readonly code = 'precondition_failed';
}
export class TooLargeError extends BatonError {
  readonly code = 'too_large';
  constructor(what: string, size: number, limit: number) {
    super(`${what} is ${size}, over the limit of ${limit}`, { limit, size });
  }
}
export class QuotaExceededError extends BatonError {
  readonly code = 'quota_exceeded';
  override readonly retryable = true;
}
export class OverloadedError extends BatonError {
  readonly code = 'overloaded';
  override readonly retryable = true;
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

export const httpStatusByCode: Readonly<Record<string, number>> = {
  invalid_argument: 400,
  key_not_found: 404,
  lease_not_found: 404,
  lock_not_held: 409,
  lock_held: 409,
  request_id_reused: 409,
  compacted: 410,
  precondition_failed: 412,
  too_large: 413,
  quota_exceeded: 429,
  overloaded: 429,
  unavailable: 503,
  timeout: 504,
};
