// Requests Node's HTTP parser refuses before any route sees them (a malformed request line or
// header, a header block over the limit, both Content-Length and chunked, a bad chunk size, a
// request that never completes) are answered as JSON errors with the headers every answer
// carries, like every other error: Node's own answer is a bare `400 Bad Request` without a body.
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { maxHeaderSize, STATUS_CODES } from 'node:http';
import { httpStatusByCode, InvalidArgumentError, TooLargeError, type BatonError } from '../../base/errors.js';

export interface ClientErrorContext {
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

/** Answers the server's parser errors as JSON, then closes the connection. */
export function answerClientErrors(server: Server, context: ClientErrorContext): void {
  server.on('clientError', (error: Error & { code?: string }, socket: Duplex) => {
    const answer = clientErrorAnswer(error, maxHeaderSize);
    // An answer already under way on this socket cannot be replaced by another one.
    const busy = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (answer === null || busy || !socket.writable) {
      socket.destroy();
      return;
    }
    const status = httpStatusByCode[answer.code] ?? 400;
    const body = JSON.stringify({ error: { code: answer.code, message: answer.message, ...answer.details } });
    const head = [
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
      'content-type: application/json',
      `content-length: ${Buffer.byteLength(body)}`,
      `baton-revision: ${context.revision()}`,
      `baton-cell: ${context.cellId}`,
      'connection: close',
    ].join('\r\n');
    socket.once('finish', () => socket.destroy());
    socket.end(`${head}\r\n\r\n${body}`);
  });
}
