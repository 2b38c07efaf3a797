// Request bodies are read with a limit: an over-limit Content-Length is refused before a byte is
// read, and a body that grows past the limit while streaming is cut off, so a client can never
// make a node buffer more than the limit.
import type { IncomingMessage } from 'node:http';
import { InvalidArgumentError, TooLargeError } from '../../base/errors.js';

export async function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limitBytes) {
    throw new TooLargeError('request body', Number(declared), limitBytes);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > limitBytes) {
      req.destroy();
      throw new TooLargeError('request body', size, limitBytes);
    }
    chunks.push(chunk);
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
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
