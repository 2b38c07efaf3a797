// Followers pass keepalives and time-to-live queries to the leader over its client HTTP API
// (member client URLs come from the initial cluster): renewals never go through the log, and
// only the leader holds deadlines. The leader's answer, or its error, is passed back unchanged.
import { BatonError, UnavailableError } from '../base/errors.js';
import { forwardedHeader } from '../api/http/lease-routes.js';

/** An error answered by the leader, passed on with its code (the table maps it to a status). */
export class ForwardedError extends BatonError {
  readonly code: string;
  override readonly retryable: boolean;
  constructor(code: string, message: string, details: Record<string, unknown>) {
    super(message, details);
    this.code = code;
    this.retryable = ['overloaded', 'unavailable', 'timeout', 'quota_exceeded'].includes(code);
  }
}

export async function forwardToLeader(
  leaderUrl: string,
  request: { method: 'GET' | 'POST'; path: string; body?: unknown; timeoutMs: number },
): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(new URL(request.path, leaderUrl), {
      method: request.method,
      headers: { 'content-type': 'application/json', [forwardedHeader]: '1' },
      ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
      signal: AbortSignal.timeout(request.timeoutMs),
    });
  } catch (error) {
    throw new UnavailableError(`the leader at ${leaderUrl} did not answer: ${(error as Error).message}`);
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new UnavailableError(`the leader at ${leaderUrl} answered ${res.status} without JSON`);
  }
  if (res.ok) return body;
  const error = (body as { error?: { code?: unknown; message?: unknown } }).error;
  const { code, message, ...details } = (error ?? {}) as Record<string, unknown>;
  if (typeof code !== 'string') throw new UnavailableError(`the leader answered ${res.status}`);
  throw new ForwardedError(code, typeof message === 'string' ? message : code, details);
}
