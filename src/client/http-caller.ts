// One logical API call over HTTP, with failover and retries. The rules that keep retries safe:
// - a mutation gets its Request-ID once, before the first attempt, and every retry resends that
//   same ID, so a first attempt that committed but whose answer was lost is not applied twice
//   (the server returns the original outcome from its dedup window);
// - only "not done" and "outcome unknown" failures are retried (see isRetryable); a definite
//   answer is returned to the caller at once;
// - retries wait a fully jittered, bounded, exponentially growing delay, at least Retry-After.
import { BatonError, TimeoutError, UnavailableError } from '../base/errors.js';
import { EndpointSet } from './endpoints.js';
import { ClosedError, errorFromHttp } from './errors.js';
import { backoffDelayMs, isRetryable, newRequestId, parseRetryAfterMs } from './retry.js';
import type {
  ClientClock,
  ClusterStatus,
  HttpAnswer,
  HttpTransport,
  RetryPolicy,
} from './types.js';

export interface CallRequest {
  readonly method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  /** Path and query, e.g. `/v1/kv/a?prefix=true`. */
  readonly path: string;
  readonly body?: string | Uint8Array;
  readonly headers?: Readonly<Record<string, string>>;
  /** Mutations carry a Request-ID (given, or drawn once here). */
  readonly mutation: boolean;
  readonly requestId?: string;
  /** This call's per-attempt timeout (default: the policy's), e.g. for a lock wait. */
  readonly attemptTimeoutMs?: number;
  /** No new attempt starts after this long (default: the policy's deadline). */
  readonly deadlineMs?: number;
  /** Aborts the attempt in flight and stops retrying (the caller went away). */
  readonly signal?: AbortSignal;
  /** The body of attempt N (e.g. a wait shortened by the time already spent); overrides `body`. */
  readonly bodyFor?: (attempt: number) => string;
}

export interface CallAnswer<T> {
  readonly body: T;
  readonly status: number;
  readonly attempts: number;
  readonly requestId: string | undefined;
}

/** How often the member list may be re-read after failures (bounds discovery traffic). */
const rediscoverIntervalMs = 5_000;

export class HttpCaller {
  constructor(
    readonly endpoints: EndpointSet,
    private readonly transport: HttpTransport,
    private readonly policy: RetryPolicy,
    private readonly clock: ClientClock,
    private readonly random: () => number,
    private readonly discover: boolean,
  ) {}

  /** Set by the client's close(): calls still retrying give up at their next attempt. */
  closed = false;
  /**
   * Set by a cells client (cells-client.ts): on wrong_cell, the owning cell's endpoints for the
   * rest of this call (the cache updated from the answer), or null to give up. Unset, the caller
   * follows the answer's endpoints itself (EndpointSet.follow).
   */
  redirect: ((error: BatonError) => Promise<EndpointSet | null>) | null = null;

  async call<T>(request: CallRequest): Promise<CallAnswer<T>> {
    const requestId = request.mutation ? (request.requestId ?? newRequestId()) : undefined;
    const headers: Record<string, string> = { ...request.headers };
    if (requestId !== undefined) headers['request-id'] = requestId;
    // Learn the members once up front; later only after failures (a healthy client adds no load).
    const neverDiscovered = this.endpoints.discoveredAtMs === Number.NEGATIVE_INFINITY;
    if (this.discover && neverDiscovered) await this.maybeDiscover();
    const startMs = this.clock.monotonicMs();
    const deadlineMs = request.deadlineMs ?? this.policy.deadlineMs;
    let followed = false;
    let endpoints = this.endpoints;
    // A mutation attempt that may have applied (no answer, or timeout/unavailable): from then on a
    // wrong_cell proves nothing (fault run across cells, seed 3: a put reported refused was read
    // back later). A cell answers a retry from its Request-ID record before judging ownership, but
    // a record can be missing where the retry lands: expired (the dedup window), or not yet on a
    // destination still landing the namespace (a record applied late on the source).
    let mayHaveApplied = false;
    for (let attempt = 0; ; attempt++) {
      throwIfAborted(request.signal);
      const endpoint = endpoints.pick();
      const outcome = await this.attempt(endpoint, request, headers, attempt);
      throwIfAborted(request.signal);
      if (!(outcome instanceof BatonError)) {
        if (outcome.status < 300) {
          const body = parseBody<T>(outcome.text);
          return { body, status: outcome.status, attempts: attempt + 1, requestId };
        }
      }
      const answered = !(outcome instanceof BatonError);
      const error = answered ? errorFromHttp(outcome.status, outcome.text) : outcome;
      const ambiguous = mayHaveApplied && error.code === 'wrong_cell';
      if (request.mutation && (!answered || error.code === 'timeout' || error.code === 'unavailable')) mayHaveApplied = true;
      // Stale routing: the cell named the owner. Go there once, at once (no backoff sleep).
      const owner = error.code === 'wrong_cell' ? error.details['endpoints'] : undefined;
      if (!followed && error.code === 'wrong_cell' && this.redirect !== null && attempt + 1 < this.policy.attemptsMax) {
        followed = true;
        const target = await this.redirect(error);
        if (target === null) throw error;
        endpoints = target;
        continue;
      }
      if ((!followed || ambiguous) && Array.isArray(owner) && owner.length > 0 && attempt + 1 < this.policy.attemptsMax) {
        followed = true;
        this.endpoints.follow(owner.filter((url): url is string => typeof url === 'string'));
        continue;
      }
      // Asked again (with backoff) until the owner answers from its Request-ID record, or given up as unknown.
      if (!isRetryable(error) && !ambiguous) throw error;
      // This node cannot serve now (no leader, dead, partitioned): the next attempt goes elsewhere.
      if (error.code === 'unavailable' || error.code === 'timeout') endpoints.failed(endpoint);
      const retryAfterMs = answered ? parseRetryAfterMs(outcome.header('retry-after')) : undefined;
      const delayMs = backoffDelayMs(this.policy, attempt, this.random, retryAfterMs);
      const elapsedMs = this.clock.monotonicMs() - startMs;
      if (attempt + 1 >= this.policy.attemptsMax || elapsedMs + delayMs > deadlineMs) {
        (error.details as Record<string, unknown>)['attempts'] = attempt + 1;
        if (ambiguous) {
          throw new TimeoutError('the outcome is unknown: an earlier attempt may have applied before its namespace moved; retry with the same Request-ID',
            { ...error.details, cause: error.code });
        }
        throw error;
      }
      await this.clock.sleep(delayMs);
      if (this.closed) {
        throw new ClosedError('the client was closed while this call was retrying', {
          cause: error,
        });
      }
      if (this.discover && attempt >= 1) await this.maybeDiscover();
    }
  }

  private async attempt(
    endpoint: string,
    request: CallRequest,
    headers: Record<string, string>,
    attempt: number,
  ): Promise<HttpAnswer | BatonError> {
    const body = request.bodyFor?.(attempt) ?? request.body;
    try {
      return await this.transport({
        method: request.method,
        url: endpoint + request.path,
        headers,
        ...(body === undefined ? {} : { body }),
        timeoutMs: request.attemptTimeoutMs ?? this.policy.attemptTimeoutMs,
        ...(request.signal === undefined ? {} : { signal: request.signal }),
      });
    } catch (cause) {
      return noAnswerError(endpoint, cause);
    }
  }

  /** Learns the cell's members (leader first), at most once per interval; failures are ignored. */
  private async maybeDiscover(): Promise<void> {
    const nowMs = this.clock.monotonicMs();
    if (nowMs - this.endpoints.discoveredAtMs < rediscoverIntervalMs) return;
    this.endpoints.discoveredAtMs = nowMs;
    for (const endpoint of this.endpoints.all.slice(0, 3)) {
      try {
        const answer = await this.transport({
          method: 'GET',
          url: `${endpoint}/v1/cluster/status`,
          headers: {},
          timeoutMs: Math.min(this.policy.attemptTimeoutMs, 2_000),
        });
        if (answer.status !== 200) continue;
        this.endpoints.learn(parseBody<ClusterStatus>(answer.text), nowMs);
        return;
      } catch {
        // That endpoint is down: ask the next one.
      }
    }
  }
}

/** The caller's abort reason (e.g. SessionLostError), thrown as is. */
function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw signal.reason;
}

function parseBody<T>(text: string): T {
  return (text.length === 0 ? {} : JSON.parse(text)) as T;
}

/** No answer: a timeout leaves the outcome unknown; a refused connection means "not there". */
export function noAnswerError(endpoint: string, cause: unknown): BatonError {
  const name = cause instanceof Error ? cause.name : '';
  if (name === 'TimeoutError' || name === 'AbortError') {
    const message = `no answer from ${endpoint} in time (the outcome is unknown)`;
    return new TimeoutError(message, { endpoint }, { cause });
  }
  const inner = cause instanceof Error && cause.cause instanceof Error ? cause.cause : cause;
  const reason = inner instanceof Error ? inner.message : String(inner);
  return new UnavailableError(`cannot reach ${endpoint}: ${reason}`, { endpoint }, { cause });
}
