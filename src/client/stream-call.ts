// One logical request over the client's stream (/v1/stream), with the same retry rules as
// HttpCaller: a mutation draws its Request-ID once and every retry resends it (the server's
// dedup then answers a committed first attempt with its first outcome); only "not done" and
// "outcome unknown" failures (a dropped connection, no answer in time, `unavailable`) are
// retried, after a fully jittered, bounded delay; a definite answer is final.
//
// A frame cannot be withdrawn once sent (the server aborts a waiting acquire or campaign only
// when the whole connection closes, and the connection is shared), so when the caller's signal
// aborts, the call rejects at once with its reason and `onAbandon` runs to undo on the server
// whatever the frame may have started (locks and elections withdraw their queue entry).
import { BatonError } from '../base/errors.js';
import type { BatonClient } from './client.js';
import { monotonicNowMs } from './clock.js';
import { ClosedError } from './errors.js';
import { backoffDelayMs, newRequestId } from './retry.js';

export interface StreamCallOptions {
  readonly mutation: boolean;
  readonly requestId?: string | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Per attempt (default: the policy's), e.g. a lock wait plus slack. */
  readonly attemptTimeoutMs?: number | undefined;
  /** No new attempt starts after this long (default: the policy's deadline). */
  readonly deadlineMs?: number | undefined;
  /** The frame of attempt N (e.g. a wait shortened by the time already spent). */
  readonly frameFor?: ((attempt: number) => Record<string, unknown>) | undefined;
  /** Runs once if the signal aborts after a frame was sent, with the call's Request-ID. */
  readonly onAbandon?: ((requestId: string | undefined) => void) | undefined;
}

export async function streamCall<T>(
  client: BatonClient,
  frame: Record<string, unknown>,
  options: StreamCallOptions,
): Promise<T> {
  const requestId = options.mutation ? (options.requestId ?? newRequestId()) : undefined;
  const policy = client.retryPolicy;
  const { signal } = options;
  const startMs = monotonicNowMs();
  const deadlineMs = options.deadlineMs ?? policy.deadlineMs;
  let sent = false;
  // The client whose stream carries the next attempt: another cell's after a wrong_cell followed.
  let target = client;
  let followed = false;
  const abandon = (): never => {
    if (sent) options.onAbandon?.(requestId);
    throw signal?.reason;
  };
  for (let attempt = 0; ; attempt++) {
    if (signal?.aborted === true) abandon();
    if (client.isClosed) throw new ClosedError('the client is closed');
    const body = { ...(options.frameFor?.(attempt) ?? frame), ...(requestId === undefined ? {} : { requestId }) };
    let error: unknown;
    try {
      sent = true;
      const answer = target.stream.request(body, options.attemptTimeoutMs ?? policy.attemptTimeoutMs);
      return (await untilAborted(answer, signal)) as T;
    } catch (failure) {
      error = failure;
    }
    if (signal?.aborted === true) abandon();
    // Talking to cells directly (a cells client): stale routing is corrected in one round trip,
    // the cache updated from the answer and the frame sent to the owner's stream at once, with
    // the same Request-ID (a waiter the fence ended resumes its moved entry there, as through a
    // router). A later wrong_cell (the destination still landing the namespace) is asked again
    // after the backoff, as a router's passed-on wrong_cell is, at the owner of that moment.
    const redirect = client.cellRedirect;
    const moved = error instanceof BatonError && error.code === 'wrong_cell' && redirect !== null;
    if (moved && attempt + 1 < policy.attemptsMax) {
      const owner = await redirect(error as BatonError);
      if (owner === null) throw error;
      target = owner;
      if (!followed) {
        followed = true;
        continue;
      }
    }
    if (!(error instanceof BatonError) || !(error.retryable || moved || movingThroughRouter(client, error))) throw error;
    const delayMs = backoffDelayMs(policy, attempt, client.random);
    if (attempt + 1 >= policy.attemptsMax || monotonicNowMs() - startMs + delayMs > deadlineMs) {
      (error.details as Record<string, unknown>)['attempts'] = attempt + 1;
      throw error;
    }
    await sleep(delayMs, signal);
  }
}

/**
 * A router passes on wrong_cell when its one re-send met a namespace between a move's fence and
 * its landing (docs/design/cells.md): asked again after the backoff, it sends the frame to the
 * owner of that moment. Same Request-ID, so a lock waiter resumes its queue entry there. A client
 * talking to cells directly does not retry it: the cell it talks to will not change its answer.
 */
function movingThroughRouter(client: BatonClient, error: BatonError): boolean {
  return error.code === 'wrong_cell' && client.endpoints.routed;
}

/** The answer, or a rejection as soon as the signal aborts (the answer is then ignored). */
function untilAborted<T>(answer: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return answer;
  answer.catch(() => undefined); // an answer nobody waits for any more must not go unhandled
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    answer.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}
