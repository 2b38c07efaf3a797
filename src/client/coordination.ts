// What locks, elections and services share: the session they hang on (a Session or a
// WorkerSession: anything with a lease, a signal and a truthful safeUntil), name checks done
// before anything is sent, and the JSON POST they all make.
import { InvalidArgumentError, TooLargeError } from '../base/errors.js';
import type { BatonClient } from './client.js';
import { SessionLostError } from './errors.js';

/** The lease holder a lock, leadership or registration belongs to (Session or WorkerSession). */
export interface OwnerSession {
  readonly leaseId: number;
  /** Aborted when ownership can no longer be assumed (lost or closed). */
  readonly signal: AbortSignal;
  /** Monotonic ms (monotonicNowMs) until which the lease certainly exists. */
  readonly safeUntil: number;
  isSafe(): boolean;
}

/** Lock and election names, service names and instance IDs: 1..128 UTF-8 bytes, no '/'. */
export const nameBytesMax = 128;

export function checkName(name: string, what: string): void {
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes === 0 || bytes > nameBytesMax) {
    throw new InvalidArgumentError(`${what} must be 1..${nameBytesMax} UTF-8 bytes (got ${bytes})`);
  }
  if (name.includes('/')) throw new InvalidArgumentError(`${what} "${name}" must not contain '/'`);
}

export function checkBytes(text: string, what: string, limit: number): void {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > limit) throw new TooLargeError(what, bytes, limit);
}

/** Throws the session's own loss reason (or a SessionLostError) when it is not safe now. */
export function requireSafe(session: OwnerSession): void {
  if (session.isSafe()) return;
  const reason: unknown = session.signal.reason;
  if (reason instanceof Error) throw reason;
  throw new SessionLostError(session.leaseId, 'the session is not safe (safeUntil has passed)');
}

export interface PostOptions {
  readonly mutation: boolean;
  readonly requestId?: string | undefined;
  readonly signal?: AbortSignal | undefined;
  readonly attemptTimeoutMs?: number;
  readonly deadlineMs?: number;
  readonly bodyFor?: (attempt: number) => string;
}

export function postJson<T>(
  client: BatonClient,
  path: string,
  body: unknown,
  options: PostOptions,
): Promise<T> {
  return client.request<T>({
    method: 'POST',
    path,
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
    mutation: options.mutation,
    ...(options.requestId === undefined ? {} : { requestId: options.requestId }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.attemptTimeoutMs === undefined ? {} : { attemptTimeoutMs: options.attemptTimeoutMs }),
    ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
    ...(options.bodyFor === undefined ? {} : { bodyFor: options.bodyFor }),
  });
}

/** Combines signals (any abort aborts the result). */
export function anySignal(signals: readonly (AbortSignal | undefined)[]): AbortSignal {
  return AbortSignal.any(signals.filter((signal): signal is AbortSignal => signal !== undefined));
}
