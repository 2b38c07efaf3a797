// Request bodies are read with a limit: an over-limit Content-Length is refused before a byte is
// read, and a body that grows past the limit while streaming (chunked) is counted as it arrives
// and stops being kept at the limit, so a client can never make a node buffer more than the
// limit. Either way the client gets its 413 too_large, and then the connection closes: the rest
// of the body is never read into memory, only dropped while the answer drains.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { InvalidArgumentError, TooLargeError } from '../../base/errors.js';

/** How long, and how many more bytes, a cut-off client may send after its 413 before the reset. */
export const lingerLimits = { timeMs: 2_000, bytesMax: 64 * 1024 * 1024 } as const;

/** Requests whose body was refused unread (or cut off): their answer closes the connection. */
const refusedBodies = new WeakSet<IncomingMessage>();

export function bodyWasRefused(req: IncomingMessage): boolean {
  return refusedBodies.has(req);
}

/**
 * Answers on this connection end it, without a reset before the answer is read. Node ends a
 * `connection: close` socket with destroySoon() (end, then destroy once written); destroying a
 * socket the client is still writing to makes the kernel send RST, and a client that receives
 * RST may drop the answer unread ("connection reset by peer"). So: send FIN after the answer,
 * keep dropping what still arrives, and destroy when the client closes, or at lingerLimits.
 */
export function closeAfterAnswer(req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('connection', 'close');
  lingerIfUnread(req);
}

/** The request each guarded socket carries now (keep-alive sockets carry one after another). */
const currentRequest = new WeakMap<Socket, IncomingMessage>();

/**
 * Any answer sent before its request's body was read whole (an early 400, a 413, a GET that
 * ignores a body) ends with a lingering close when Node closes the connection, never a reset
 * while the client is still sending. Called for every request: one WeakMap write, and one
 * override per connection.
 */
export function lingerIfUnread(req: IncomingMessage): void {
  const socket = req.socket;
  const guarded = currentRequest.has(socket);
  currentRequest.set(socket, req);
  if (guarded) return;
  const destroySoon = socket.destroySoon.bind(socket);
  socket.destroySoon = () => {
    if (currentRequest.get(socket)?.complete === false) linger(socket);
    else destroySoon();
  };
}

/**
 * Ends the socket (after `last`, an answer written by hand) without a reset: what the client
 * still sends is read and dropped, and the socket goes when the client closes or at lingerLimits.
 */
export function linger(socket: Socket | Duplex, last?: string): void {
  const timer = setTimeout(() => socket.destroy(), lingerLimits.timeMs);
  timer.unref();
  let droppedBytes = 0;
  socket.on('data', (chunk: Buffer) => {
    droppedBytes += chunk.byteLength;
    if (droppedBytes > lingerLimits.bytesMax) socket.destroy();
  });
  socket.once('end', () => socket.destroy());
  socket.once('close', () => clearTimeout(timer));
  if (last === undefined) socket.end();
  else socket.end(last);
  socket.resume();
}

export function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limitBytes) {
    refusedBodies.add(req);
    return Promise.reject(new TooLargeError('request body', Number(declared), limitBytes));
  }
  // Plain stream events rather than `for await`: the async iterator costs a promise and several
  // closures per chunk, on every write request.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.byteLength;
      if (size > limitBytes) {
        // Stop keeping the body (what still arrives is dropped: the stream keeps flowing with no
        // listener); the answer goes out first and closes the connection (closeAfterAnswer).
        done();
        refusedBodies.add(req);
        reject(new TooLargeError('request body', size, limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      done();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    // The socket failed mid-body (a reset, an abort): an operating condition, not a bug.
    const onError = (error: Error): void => {
      done();
      reject(new InvalidArgumentError(`the request body could not be read: ${error.message}`, {}, { cause: error }));
    };
    // Closed before 'end': the client went away mid-body.
    const onClose = (): void => {
      done();
      // An operating condition, not a bug: nobody hears this answer, and nothing is logged.
      reject(new InvalidArgumentError('the request body ended early (connection closed)'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

export async function readJson(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const body = await readBody(req, limitBytes);
  if (body.byteLength === 0) throw new InvalidArgumentError('a JSON body is required');
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new InvalidArgumentError(`malformed JSON: ${(error as Error).message}`);
  }
}
