// The client's errors are the server's: every API answer with an error code becomes the same
// BatonError class the server threw (src/base/errors.ts), so `error.code` and `error.retryable`
// mean the same on both sides. Failures with no answer (network, timeout) are `unavailable` or
// `timeout`: retryable, and for a mutation only with the same Request-ID. The classes are
// exported to users from index.ts.
import {
  BatonError,
  CompactedError,
  CrossCellError,
  WrongCellError,
  InvalidArgumentError,
  KeyNotFoundError,
  LeaseNotFoundError,
  LockHeldError,
  LockNotHeldError,
  OverloadedError,
  PreconditionFailedError,
  PermissionDeniedError,
  UnauthenticatedError,
  QuotaExceededError,
  RequestIdReusedError,
  SlowConsumerError,
  TimeoutError,
  TooLargeError,
  UnavailableError,
  isErrorCode,
  wireCode,
  type ErrorCode,
  type UnknownCode,
} from '../base/errors.js';


/** An answer with a code this client does not know (a newer server): never retried. */
export class UnknownCodeError extends BatonError {
  readonly code: ErrorCode | UnknownCode;
  constructor(code: string, message: string, details: Record<string, unknown>) {
    super(message, details);
    this.code = wireCode(code);
  }
}

/** The session's lease can no longer be trusted: owner-only work must stop. */
export class SessionLostError extends Error {
  override name = 'SessionLostError';
  readonly code = 'session_lost';
  constructor(
    readonly leaseId: number,
    readonly reason: string,
  ) {
    super(`session lease ${leaseId} lost: ${reason}`);
  }
}

/** The client, watch or session was closed by its owner. */
export class ClosedError extends Error {
  override name = 'ClosedError';
  readonly code = 'closed';
}

type Details = Record<string, unknown>;
// Every code of the one table (src/base/errors.ts) has its class here: a new code fails to compile
// until the client knows it.
const classes: Record<ErrorCode, (message: string, details: Details) => BatonError> = {
  invalid_argument: (m, d) => new InvalidArgumentError(m, d),
  key_not_found: (m, d) => new KeyNotFoundError(m, d),
  lease_not_found: (m, d) => new LeaseNotFoundError(m, d),
  lock_not_held: (m, d) => new LockNotHeldError(m, d),
  lock_held: (m, d) => new LockHeldError(m, d),
  compacted: (_m, d) => withDetails(new CompactedError(Number(d['compactRevision'] ?? 0)), d),
  precondition_failed: (m, d) => new PreconditionFailedError(m, d),
  permission_denied: (m, d) => new PermissionDeniedError(m, d),
  unauthenticated: (m, d) => new UnauthenticatedError(m, d),
  // Never retried: the Request-ID belongs to another request; the caller must pick a new one.
  request_id_reused: (m, d) => reusedFromWire(m, d),
  too_large: (m, d) => tooLargeFromWire(m, d),
  quota_exceeded: (m, d) => new QuotaExceededError(m, d),
  overloaded: (m, d) => new OverloadedError(m, d),
  unavailable: (m, d) => new UnavailableError(m, d),
  timeout: (m, d) => new TimeoutError(m, d),
  slow_consumer: (m, d) => new SlowConsumerError(m, d),
  wrong_cell: (m, d) => ownerFromWire(m, d),
  cross_cell: (m, d) => {
    const error = new CrossCellError([]);
    Object.defineProperty(error, 'message', { value: m });
    return withDetails(error, d);
  },
};

/** The owner a wrong_cell answer names (the client follows it: docs/design/cells.md). */
function ownerFromWire(message: string, details: Details): BatonError {
  const endpoints = Array.isArray(details['endpoints']) ? details['endpoints'].filter((e): e is string => typeof e === 'string') : [];
  const error = new WrongCellError({
    namespace: String(details['namespace'] ?? ''), cell: String(details['cell'] ?? ''), epoch: Number(details['epoch'] ?? 0), endpoints,
  });
  Object.defineProperty(error, 'message', { value: message });
  return withDetails(error, details);
}

function tooLargeFromWire(message: string, details: Details): BatonError {
  const reason = details['reason'] === 'too_many_operations' ? 'too_many_operations' : undefined;
  const error = new TooLargeError('request', Number(details['size'] ?? 0), Number(details['limit'] ?? 0), reason);
  Object.defineProperty(error, 'message', { value: message });
  return withDetails(error, details);
}

function reusedFromWire(message: string, details: Details): BatonError {
  const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
  const attempted = (typeof details['attempted'] === 'object' && details['attempted'] !== null ? details['attempted'] : {}) as Details;
  const error = new RequestIdReusedError(
    text(details['requestId']) ?? '',
    { kind: text(details['kind']) ?? 'unknown', key: text(details['key']) },
    { kind: text(attempted['kind']) ?? 'unknown', key: text(attempted['key']) },
  );
  // Keep the server's words (and any detail a newer server adds).
  Object.defineProperty(error, 'message', { value: message });
  return withDetails(error, details);
}

function withDetails(error: BatonError, details: Details): BatonError {
  // CompactedError's constructor keeps only compactRevision; keep lastRevision etc. too.
  Object.assign(error.details as Details, details);
  return error;
}

/** Builds the typed error for an API error object `{code, message, ...details}`. */
export function errorFromWire(wire: unknown, fallbackCode = 'unavailable'): BatonError {
  const object = (typeof wire === 'object' && wire !== null ? wire : {}) as Details;
  const { code: rawCode, message: rawMessage, ...details } = object;
  const code = typeof rawCode === 'string' ? rawCode : fallbackCode;
  const message = typeof rawMessage === 'string' ? rawMessage : code;
  return isErrorCode(code) ? classes[code](message, details) : new UnknownCodeError(code, message, details);
}

/** The error for an HTTP answer that is not 2xx (its body is `{"error": {...}}` when JSON). */
export function errorFromHttp(status: number, text: string): BatonError {
  let wire: unknown;
  try {
    wire = (JSON.parse(text) as { error?: unknown }).error;
  } catch {
    wire = undefined;
  }
  if (wire !== undefined) return errorFromWire(wire);
  // No JSON error (a proxy in between, a 500): 502-504 are "outcome unknown", the rest definite.
  if (status === 503 || status === 502) return new UnavailableError(`HTTP ${status}`);
  if (status === 504) return new TimeoutError(`HTTP ${status}`);
  const code = status >= 500 ? 'internal' : 'http_error';
  return new UnknownCodeError(code, `HTTP ${status}: ${text.slice(0, 200)}`, { status });
}
