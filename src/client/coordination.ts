// What locks, elections and services share: the session they hang on (a Session or a
// WorkerSession: anything with a lease, a signal and a truthful safeUntil), name checks done
// before anything is sent, and the JSON POST they all make.
import {
  CompactedError,
  InvalidArgumentError,
  KeyNotFoundError,
  LockNotHeldError,
  TooLargeError,
} from '../base/errors.js';
import type { BatonClient } from './client.js';
import { SessionLostError } from './errors.js';
import type { RangeResult } from './types.js';

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

/**
 * Follows the key that makes this process the owner (a lock's or a leadership's), from the
 * revision at which ownership was granted, and calls `gone` once if it is deleted or replaced by
 * anyone (an operator's `baton del`, a revoke from elsewhere), so the owner's signal aborts now
 * rather than at the session's next renewal. Ends when `signal` aborts. After a compaction it
 * re-reads the key and carries on from there.
 */
export function followOwnKey(
  client: BatonClient,
  key: string,
  createRevision: number,
  fromRevision: number,
  signal: AbortSignal,
  gone: (reason: Error) => void,
): void {
  const lost = (revision: number): void =>
    gone(new LockNotHeldError(`${key} was deleted or replaced at revision ${revision}`, { key, revision }));
  void (async () => {
    let start = fromRevision + 1;
    while (!signal.aborted) {
      try {
        for await (const batch of client.watch(key, { startRevision: start, signal })) {
          const event = batch.events.find((e) => e.type === 'delete' || e.kv.createRevision !== createRevision);
          if (event !== undefined) return lost(event.kv.modRevision);
        }
        return; // canceled (signal) or the client closed
      } catch (error) {
        if (signal.aborted || !(error instanceof CompactedError)) return;
        const read = await client.get(key).catch((failure: unknown) => failure);
        if (read instanceof KeyNotFoundError) return lost(Number(read.details['revision'] ?? 0));
        if (read instanceof Error || read === null || typeof read !== 'object') return; // the session decides
        const { kvs, revision } = read as RangeResult;
        if (kvs[0]?.createRevision !== createRevision) return lost(revision);
        start = revision + 1;
      }
    }
  })();
}
