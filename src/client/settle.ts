// Making an unknown outcome definite, in the background, for requests that leave something held
// by a session's lease when they apply: a queue entry (lockAcquire, campaign) or a held key not
// yet given back (lockRelease, resign). Such a leftover would hold the lock for everyone as long
// as the session renews its lease, i.e. for ever. So the request is repeated with its own
// Request-ID (the cell's dedup finds the first attempt's outcome) until the cell answers
// definitely:
// - acquire/campaign repeated with waitMs 0: the cell finds the entry still queued and deletes
//   it (lock_held), or finds it granted and answers the grant, which is given back at once; or the
//   first attempt never applied, and the no-wait repeat either finds the lock taken (nothing
//   queued) or takes it, and that grant is given back.
// - release/resign repeated: released, or lock_not_held (already gone).
// While the session lives, with bounded jittered backoff. When the session ends first, nothing is
// left: the lease's end deletes its keys. If the cell keeps answering "unknown" for settleMsMax
// (well inside the cell's 10-minute dedup window, so the repeats are still recognized as the
// first request), the session is closed instead (its signal aborts first, then it revokes the
// lease or stops renewing it): ending every ownership of this session is the price of never
// leaving a ghost.
import { BatonError } from '../base/errors.js';
import type { BatonClient } from './client.js';
import { monotonicNowMs } from './clock.js';
import type { OwnerSession } from './coordination.js';
import { newRequestId, backoffDelayMs } from './retry.js';
import { sleep } from './stream-call.js';

/** Default bound on background settling before the session is ended instead. */
export const settleMsMaxDefault = 120_000;
/** One settling attempt's answer wait (no queue wait: a commit and a check). */
const settleAttemptMs = 5_000;
/** Settlings one client runs at once; beyond, the session is ended at once (the safe fallback). */
export const settlingsMax = 1_000;

/** Session and WorkerSession can be ended; a bare OwnerSession has its lease revoked. */
export interface ClosableSession {
  close?(): Promise<void>;
}

export interface SettleRequest<T> {
  /** The request to repeat (acquire/campaign already with waitMs 0), without requestId. */
  readonly frame: Record<string, unknown>;
  readonly requestId: string;
  readonly session: OwnerSession & ClosableSession;
  /** For an acquire or campaign: the frame that gives back a grant (lockRelease, resign). */
  readonly giveBack?: ((granted: T) => Record<string, unknown>) | undefined;
  readonly settleMsMax?: number | undefined;
}

/** How settling ended (for tests and logs). */
export type SettleOutcome = 'definite' | 'gaveBack' | 'sessionEnded' | 'endedSession' | 'clientClosed';

/** Settlings running now, per client (tests wait on them; close() does not need to). */
const running = new WeakMap<BatonClient, Set<Promise<SettleOutcome>>>();

/** True for answers that leave the outcome open ("not done" and "unknown" alike). */
export function isUnknownOutcome(error: unknown): boolean {
  return error instanceof BatonError && error.retryable;
}

export function settleInBackground<T>(client: BatonClient, request: SettleRequest<T>): void {
  if (client.isClosed) return; // close() closes the client's sessions: the leases go
  let set = running.get(client);
  if (set === undefined) running.set(client, (set = new Set()));
  const settling =
    set.size >= settlingsMax
      ? endSession(client, request.session).then(() => 'endedSession' as const)
      : settle(client, request).catch(() => 'clientClosed' as const);
  set.add(settling);
  void settling.then(() => set.delete(settling));
}

/** Tests: resolves when every settling of this client now running has ended. */
export async function settlingDone(client: BatonClient): Promise<SettleOutcome[]> {
  return Promise.all([...(running.get(client) ?? [])]);
}

export async function settle<T>(client: BatonClient, request: SettleRequest<T>): Promise<SettleOutcome> {
  const endMs = monotonicNowMs() + (request.settleMsMax ?? settleMsMaxDefault);
  const first = await untilDefinite<T>(client, request, request.frame, request.requestId, endMs);
  if (first.type !== 'answer') return first.type;
  if (request.giveBack === undefined) return 'definite';
  // Granted to nobody who wants it: give it back, with the same persistence.
  const released = await untilDefinite(client, request, request.giveBack(first.answer), newRequestId(), endMs);
  return released.type === 'answer' ? 'gaveBack' : released.type;
}

type Definite<T> = { readonly type: 'answer'; readonly answer: T } | { readonly type: Exclude<SettleOutcome, 'gaveBack'> };

/**
 * Repeats `frame` (one Request-ID) until a definite answer: a result, or an error that is not
 * retryable (lock_held, lock_not_held, lease_not_found: nothing is left either way). Sends at
 * least once even if the session already ended (the withdrawal frees the lock sooner than the
 * lease's expiry would).
 */
async function untilDefinite<T>(
  client: BatonClient,
  request: SettleRequest<T>,
  frame: Record<string, unknown>,
  requestId: string,
  endMs: number,
): Promise<Definite<T>> {
  const { session } = request;
  for (let attempt = 0; ; attempt++) {
    if (client.isClosed) return { type: 'clientClosed' };
    try {
      const answer = (await client.stream.request({ ...frame, requestId }, settleAttemptMs)) as T;
      return { type: 'answer', answer };
    } catch (error) {
      if (!isUnknownOutcome(error)) return { type: client.isClosed ? 'clientClosed' : 'definite' };
    }
    if (session.signal.aborted) return { type: 'sessionEnded' };
    if (monotonicNowMs() >= endMs) {
      await endSession(client, session);
      return { type: 'endedSession' };
    }
    await sleep(backoffDelayMs(client.retryPolicy, attempt, client.random), session.signal);
    if (session.signal.aborted) return { type: 'sessionEnded' };
  }
}

/** The fallback: the session ends (its signal first), so its lease and everything on it go. */
async function endSession(client: BatonClient, session: OwnerSession & ClosableSession): Promise<void> {
  try {
    if (session.close !== undefined) await session.close();
    else await client.leaseRevoke(session.leaseId);
  } catch {
    // A session that cannot revoke has stopped renewing: the lease expires within its TTL.
  }
}
