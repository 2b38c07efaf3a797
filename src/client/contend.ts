// Waiting in a lock's or an election's queue over the client's stream (lockAcquire, campaign):
// what acquire and campaign share.
// - A retry after a lost answer resumes the same queue entry (same Request-ID) and waits only
//   for what is left of the caller's wait.
// - The server withdraws a waiting request's entry when the connection it came on closes. A
//   connection the client dropped while the server was alive (a missed ping, moving off a node
//   that answers `unavailable`) can thus turn the retry's answer into lock_held although the
//   caller's wait is not over; the entry is gone, so the wait starts again with a new
//   Request-ID for what is left (a later place in the queue, never two entries).
// - A frame cannot be taken back, and the connection is shared, so an abandoned wait (caller
//   abort, session lost) is withdrawn by repeating it with its Request-ID and no wait.
// - An acquire that ends with an unknown outcome (no answer before the retry deadline) may have
//   left an entry queued on the cell; while the session renews its lease, that ghost would hold
//   the lock for everyone, for ever. So after the caller hears "unknown", the same repeat (same
//   Request-ID, no wait) goes on in the background until the cell answers definitely (see
//   settle.ts).
import { BatonError, LockHeldError } from '../base/errors.js';
import type { BatonClient } from './client.js';
import { monotonicNowMs } from './clock.js';
import type { OwnerSession } from './coordination.js';
import { newRequestId } from './retry.js';
import { isUnknownOutcome, settleInBackground, type ClosableSession } from './settle.js';
import { withdrawMovedEntry } from './moved-entry.js';
import { streamCall } from './stream-call.js';

/** Extra time an attempt may take beyond the wait it asked for (commit, network). */
export const answerSlackMs = 5_000;
/** Fresh starts after a withdrawn entry (each needs a dropped connection: rare). */
const restartsMax = 3;

export interface ContendRequest<T> {
  /** The frame without waitMs (lockAcquire or campaign). */
  readonly frame: Record<string, unknown>;
  readonly waitMs: number;
  readonly requestId?: string | undefined;
  /** The session whose lease the entry hangs on: background settling lasts while it lives. */
  readonly session: OwnerSession & ClosableSession;
  /** The session's signal and the caller's. */
  readonly signal: AbortSignal;
  /** The frame that gives back a grant nobody wants any more (lockRelease, resign). */
  readonly giveBack: (granted: T) => Record<string, unknown>;
  /** Tests: how long background settling may take before it ends the session instead. */
  readonly settleMsMax?: number | undefined;
}

/** A wait the fence of a namespace move ended: its answer names the entry that moved (src/lock/queue.ts). */
function movedEntry(error: unknown): boolean {
  return error instanceof BatonError && error.code === 'wrong_cell' && typeof error.details['entry'] === 'string';
}

export async function contend<T>(client: BatonClient, request: ContendRequest<T>): Promise<T> {
  const startMs = monotonicNowMs();
  const leftMs = (): number => Math.max(0, request.waitMs - Math.round(monotonicNowMs() - startMs));
  for (let restart = 0; ; restart++) {
    let retried = false;
    const roundWaitMs = leftMs();
    // Drawn here, not in streamCall: settling an unknown outcome needs it.
    const requestId = restart === 0 ? (request.requestId ?? newRequestId()) : newRequestId();
    const settle = (): void => settleInBackground(client, { ...request, frame: { ...request.frame, waitMs: 0 }, requestId });
    const frameFor = (attempt: number): Record<string, unknown> => {
      retried ||= attempt > 0;
      return { ...request.frame, waitMs: attempt === 0 ? roundWaitMs : leftMs() };
    };
    try {
      return await streamCall<T>(client, frameFor(0), {
        mutation: true,
        requestId,
        signal: request.signal,
        attemptTimeoutMs: roundWaitMs + answerSlackMs,
        deadlineMs: roundWaitMs + client.retryPolicy.deadlineMs,
        frameFor,
        onAbandon: settle,
      });
    } catch (error) {
      const withdrawn = error instanceof LockHeldError && retried && request.waitMs > 0 && leftMs() > 0;
      if (withdrawn && restart < restartsMax) continue;
      // An abandoned call (signal aborted) was handed to onAbandon already.
      if (isUnknownOutcome(error) && !request.signal.aborted) settle();
      // Moved with its namespace to a cell this client's stream does not reach (through a router
      // the call goes on there instead): withdrawn there, or it would hold the lock for everyone.
      if (movedEntry(error) && !request.signal.aborted) {
        withdrawMovedEntry(client, { frame: request.frame, requestId, giveBack: request.giveBack, signal: request.session.signal });
      }
      throw error;
    }
  }
}
