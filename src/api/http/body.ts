// Request bodies are read with a limit: an over-limit Content-Length is refused before a byte is
// read, and a body that grows past the limit while streaming is cut off, so a client can never
// make a node buffer more than the limit.
import type { IncomingMessage } from 'node:http';
import { InvalidArgumentError, TooLargeError } from '../../base/errors.js';

export function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limitBytes) {
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
        done();
        req.destroy();
        reject(new TooLargeError('request body', size, limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      done();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (error: Error): void => {
      done();
      reject(error);
    };
    // Closed before 'end': the client went away mid-body.
    const onClose = (): void => {
      done();
      reject(new Error('the request body ended early (connection closed)'));
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
