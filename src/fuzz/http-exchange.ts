// One raw HTTP exchange: the case's bytes exactly as drawn (pauses, lies and all) on a fresh
// loopback socket, then everything the node answers, read until it closes (every case says
// Connection: close) or the time bound. Stops sending once an answer arrived (a 413 mid-body).
import { connect, type Socket } from 'node:net';
import type { FuzzCase } from './cases.js';
import { checkHttpAnswer, type HttpAnswer } from './checks.js';

export interface ExchangeResult {
  /** null = as documented. */
  readonly problem: string | null;
  readonly status: number | null;
}

type HttpCase = Extract<FuzzCase, { channel: 'http' }>;

export function runHttpCase(port: number, fuzzCase: HttpCase, timeoutMs: number): Promise<ExchangeResult> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    let receivedBytes = 0;
    let socketError: string | null = null;
    let settled = false;
    let answer: HttpAnswer | null = null;
    const timer = setTimeout(() => finish(`no answer and no close within ${timeoutMs} ms (hang)`), timeoutMs);
    const finish = (problem: string | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ problem, status: answer?.status ?? null });
    };
    const judge = (): void => {
      if (answer === null) {
        if (receivedBytes === 0 && fuzzCase.expect === 'answer-or-close') return finish(null);
        if (receivedBytes === 0) return finish(`closed without an answer${socketError === null ? '' : ` (${socketError})`}`);
        const text = Buffer.concat(received).subarray(0, 160).toString('latin1');
        if (/^HTTP\/1\.[01] 1\d\d /.test(text)) return finish(`closed after an interim answer only: ${JSON.stringify(text)}`);
        return finish(`not an HTTP answer: ${JSON.stringify(text)}`);
      }
      finish(checkHttpAnswer(answer, fuzzCase));
    };
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      receivedBytes += chunk.length;
      if (receivedBytes > 64 * 1024 * 1024) return finish('answer over 64 MiB');
      answer ??= parseAnswer(Buffer.concat(received), fuzzCase.head);
      // Judged once complete: a connection kept open (keep-alive, SSE, an upgraded socket) is
      // no hang; the connection counts at the end of the run catch sockets the node never frees.
      if (answer !== null) judge();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      socketError = error.code ?? error.message;
    });
    socket.on('close', () => {
      answer ??= parseAnswer(Buffer.concat(received), fuzzCase.head, true);
      judge();
    });
    socket.on('connect', () => {
      writePieces(socket, fuzzCase, () => answer !== null || settled).catch(() => {});
    });
  });
}

async function writePieces(socket: Socket, fuzzCase: HttpCase, stop: () => boolean): Promise<void> {
  for (const piece of fuzzCase.pieces) {
    if (piece.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, piece.delayMs));
    for (let i = 0; i < (piece.repeat ?? 1); i++) {
      if (stop() || socket.destroyed || !socket.writable) return;
      if (!socket.write(piece.bytes)) {
        await new Promise<void>((resolve) => {
          const done = (): void => {
            socket.off('drain', done);
            socket.off('close', done);
            resolve();
          };
          socket.on('drain', done);
          socket.on('close', done);
        });
      }
    }
  }
  if (fuzzCase.endAfter && socket.writable) socket.end();
}

/**
 * The first final answer in `bytes` (1xx interim answers skipped), or null while incomplete.
 * `closed`: the connection ended, so a body without a length runs to here.
 */
export function parseAnswer(bytes: Buffer, head: boolean, closed = false): HttpAnswer | null {
  let at = 0;
  for (;;) {
    const end = bytes.indexOf('\r\n\r\n', at);
    if (end < 0) return null;
    const lines = bytes.subarray(at, end).toString('latin1').split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
    if (match === null) return null;
    const status = Number(match[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const bodyAt = end + 4;
    if (status >= 100 && status < 200 && status !== 101) {
      at = bodyAt;
      continue;
    }
    if (head || status === 101 || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0) };
    if ((headers['content-type'] ?? '').startsWith('text/event-stream')) return { status, headers, body: Buffer.alloc(0) };
    const length = headers['content-length'];
    if (length !== undefined) {
      const size = Number(length);
      if (bytes.length - bodyAt < size) return closed ? { status, headers, body: bytes.subarray(bodyAt) } : null;
      return { status, headers, body: bytes.subarray(bodyAt, bodyAt + size) };
    }
    if ((headers['transfer-encoding'] ?? '').includes('chunked')) {
      const body = dechunk(bytes.subarray(bodyAt));
      return body !== null ? { status, headers, body } : closed ? { status, headers, body: Buffer.alloc(0) } : null;
    }
    return closed ? { status, headers, body: bytes.subarray(bodyAt) } : null;
  }
}

function dechunk(bytes: Buffer): Buffer | null {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at);
    if (lineEnd < 0) return null;
    const size = parseInt(bytes.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size)) return null;
    if (size === 0) return Buffer.concat(parts);
    if (bytes.length < lineEnd + 2 + size + 2) return null;
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
