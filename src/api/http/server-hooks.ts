// What the node's HTTP server answers before (or instead of) a route, as JSON errors with the
// headers every answer carries, like every other error: requests Node's parser refuses (a
// malformed request line or header, a header block over the limit, Content-Length with chunked,
// a bad chunk size, a request not complete in time), a CONNECT, an Expect other than
// 100-continue, an HTTP/1.1 request without Host. Node's own answers are bare (`400 Bad Request`
// without a body, `417`, a silent close for CONNECT).
import { maxHeaderSize, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { httpStatusOf, InvalidArgumentError, TooLargeError, type BatonError } from '../../base/errors.js';
import { closeAfterAnswer, linger } from './body.js';
import { sendError } from './respond.js';

export interface ServerHookContext {
  readonly cellId: string;
  revision(): number;
}

/** The error to answer for a parser error (`code` from llhttp or Node), or null: close, say nothing. */
export function clientErrorAnswer(error: Error & { code?: string }, headerBytesMax: number): BatonError | null {
  switch (error.code) {
    case 'ECONNRESET':
    case 'EPIPE':
      return null;
    case 'HPE_HEADER_OVERFLOW':
      return new TooLargeError('request headers', headerBytesMax + 1, headerBytesMax);
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return new InvalidArgumentError('the request was not complete in time');
    default:
      return new InvalidArgumentError(`malformed HTTP request (${error.code ?? 'parse error'}): ${error.message.slice(0, 200)}`);
  }
}

/** Installs the answers above on the node's HTTP server. */
export function attachServerHooks(server: Server, context: ServerHookContext): void {
  server.on('clientError', (error: Error & { code?: string }, socket: Duplex) => {
    const answer = clientErrorAnswer(error, maxHeaderSize);
    // An answer already under way on this socket cannot be replaced by another one.
    const busy = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (answer === null || busy) socket.destroy();
    else answerOnSocket(socket, context, answer);
  });
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    answerOnSocket(socket, context, new InvalidArgumentError('CONNECT is not supported: Baton is not a proxy'));
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const expectation = String(req.headers.expect).slice(0, 100);
    closeAfterAnswer(req, res);
    sendError(res, { cellId: context.cellId, revision: () => context.revision(), logError: () => {} }, new InvalidArgumentError(`unsupported Expect: ${expectation} (only 100-continue)`, { header: 'Expect' }));
  });
  // The handler refuses a missing Host itself (hostProblem), as JSON; Node's check answers bare.
  (server as Server & { requireHostHeader: boolean }).requireHostHeader = false;
}

/** RFC 9112 section 3.2: an HTTP/1.1 request carries exactly one Host header. */
export function hostProblem(req: IncomingMessage): InvalidArgumentError | null {
  if (req.httpVersion !== '1.1' || req.headers.host !== undefined) return null;
  return new InvalidArgumentError('an HTTP/1.1 request needs a Host header', { header: 'Host' });
}

const answeredSockets = new WeakSet<Duplex>();

/**
 * Writes one JSON error answer on a raw socket, then closes it without a reset: the rest of what
 * the client sends is dropped for a bounded time (see closeAfterAnswer in body.ts).
 */
export function answerOnSocket(socket: Duplex, context: ServerHookContext, error: BatonError, extraHeaders: Record<string, string> = {}): void {
  // Node's parser stays attached after an error and reports it again for every later chunk of
  // the same connection: the first answer is the only one.
  if (answeredSockets.has(socket)) return;
  answeredSockets.add(socket);
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const status = httpStatusOf(error.code) ?? 500;
  const body = JSON.stringify({ error: { code: error.code, message: error.message, ...error.details } });
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'baton-revision': context.revision(),
    'baton-cell': context.cellId,
    connection: 'close',
    ...(error.retryable ? { 'retry-after': retryAfterOf(error) } : {}),
    ...extraHeaders,
  };
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}`).join('\r\n');
  linger(socket, `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${head}\r\n\r\n${body}`);
}

/** Seconds to tell a refused client: the node's own guidance where it has one (session gate, tenant rates), else 1. */
function retryAfterOf(error: BatonError): number {
  const seconds = (error as { retryAfterSeconds?: unknown }).retryAfterSeconds;
  return typeof seconds === 'number' && seconds >= 1 ? seconds : 1;
}
