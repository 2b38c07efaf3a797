// Writing answers: JSON bodies, the headers every answer carries, and errors mapped through the
// one table in src/base/errors.ts (never by parsing messages). Anything that is not a BatonError
// is a bug: it is logged and answered 500 without leaking internals.
import type { ServerResponse } from 'node:http';
import { BatonError, OverloadedError, QuotaExceededError, httpStatusOf } from '../../base/errors.js';

export interface ResponseContext {
  readonly cellId: string;
  /** The revision the answer reflects (the node's applied revision when nothing more specific). */
  revision(): number;
  logError(error: unknown): void;
}

export function sendJson(
  res: ServerResponse,
  context: ResponseContext,
  status: number,
  body: unknown,
  revision = context.revision(),
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'baton-revision': String(revision),
    'baton-cell': context.cellId,
  });
  res.end(text);
}

export function sendError(res: ServerResponse, context: ResponseContext, error: unknown): void {
  if (!(error instanceof BatonError)) {
    context.logError(error);
    sendJson(res, context, 500, { error: { code: 'internal', message: 'internal error' } });
    return;
  }
  const status = httpStatusOf(error.code) ?? 500;
  if (status === 500) context.logError(error);
  if ((error instanceof QuotaExceededError || error instanceof OverloadedError) && error.retryAfterSeconds !== undefined) {
    // A tenant's admission computed when it can serve again (its bucket's refill), jitter included;
    // or the session gate's staggered guidance.
    res.setHeader('retry-after', String(error.retryAfterSeconds));
  } else if (error.retryable && (status === 429 || status === 503)) {
    // Jitter spreads retries so that a recovering cell is not hit by a synchronized storm.
    res.setHeader('retry-after', String(1 + Math.floor(Math.random() * 2)));
  }
  const revision = typeof error.details['revision'] === 'number' ? error.details['revision'] : undefined;
  sendJson(res, context, status, { error: { code: error.code, message: error.message, ...error.details } }, revision);
}
