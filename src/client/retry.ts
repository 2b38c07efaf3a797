// Retrying with bounded exponential backoff and full jitter. Full jitter (a uniform draw below an
// exponentially growing ceiling) spreads the retries of many clients that failed at the same
// moment (a leader change), so a recovering cell is not hit by a synchronized wave. A server's
// Retry-After is a floor: it knows better than we do when it can serve again.
import { randomBytes } from 'node:crypto';
import type { BatonError } from '../base/errors.js';
import type { RetryPolicy } from './types.js';

/** The wait before retry number `attempt` (0 = the first retry), in milliseconds. */
export function backoffDelayMs(
  policy: RetryPolicy,
  attempt: number,
  random: () => number,
  retryAfterMs?: number,
): number {
  const ceiling = Math.min(policy.delayMsMax, policy.delayMsBase * 2 ** Math.min(attempt, 30));
  const jittered = Math.floor(random() * ceiling);
  if (retryAfterMs === undefined) return jittered;
  // Retry-After says "not before"; still jitter above it a little so clients do not align on it.
  return Math.max(jittered, retryAfterMs + Math.floor(random() * policy.delayMsBase));
}

/** Retry-After (seconds, per HTTP) in milliseconds, or undefined when absent or unreadable. */
export function parseRetryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  if (!Number.isFinite(seconds) || seconds < 0) return undefined;
  return Math.min(seconds, 60) * 1000;
}

/**
 * Whether a failed attempt may be tried again. Only answers that say "not done" (`unavailable`,
 * `overloaded`, `quota_exceeded`) or "outcome unknown" (`timeout`, a lost connection) qualify;
 * a definite answer such as `precondition_failed` or `key_not_found` is final, and repeating it
 * would only hide the conflict from the caller.
 */
export function isRetryable(error: BatonError): boolean {
  return error.retryable;
}

/**
 * A fresh Request-ID: unique per logical operation, reused by all of its retries. Drawn from the
 * OS's cryptographic source, never from the (injectable, maybe seeded) jitter source: two clients
 * sharing an ID would be handed each other's outcomes by the server's dedup.
 */
export function newRequestId(): string {
  return `c-${randomBytes(12).toString('base64url')}`;
}
