// One gRPC call on an HTTP/2 stream, with the part of grpc-js's server-call API the facade's
// handlers use: `request` (unary and server-streaming calls), 'data' / 'end' events (client
// streams), write() with 'drain', end(), emit('error', status), 'cancelled' and 'close', and
// getDeadline(). Messages are length-prefixed (gRPC over HTTP/2: a flag byte, a u32 length).
import { EventEmitter } from 'node:events';
import { status } from '@grpc/grpc-js';
import { H2Error } from './frames.js';
import { encodeHeaders } from './hpack.js';
import type { H2Stream } from './stream.js';

const responseHeaders = encodeHeaders(200, [['content-type', 'application/grpc']]);
const okTrailers = encodeHeaders(null, [['grpc-status', '0']]);

/** What a handler's error carries (grpc-js's StatusObject shape); anything else is UNKNOWN. */
export interface CallStatus {
  readonly code?: number;
  readonly details?: string;
  readonly message?: string;
}

export interface CallCodec {
  readonly requestDeserialize: (bytes: Buffer) => unknown;
  readonly responseSerialize: (value: unknown) => Buffer;
}

export class GrpcCall extends EventEmitter {
  request: unknown = undefined;
  cancelled = false;
  private finished = false;
  private closed = false;

  constructor(
    private readonly stream: H2Stream,
    private readonly codec: CallCodec,
    private readonly deadline: Date | number,
    private readonly logError: (error: unknown) => void,
  ) {
    super();
    // emit('error', status) is how a handler ends a call with a status (as with grpc-js).
    this.on('error', (error: CallStatus) => this.finish(statusOf(error)));
  }

  getDeadline(): Date | number {
    return this.deadline;
  }

  get ended(): boolean {
    return this.finished || this.cancelled;
  }

  /** One response message; false when the stream's queue is over its high-water mark. */
  write(message: unknown): boolean {
    if (this.ended) return false;
    let payload: Buffer;
    try {
      payload = this.codec.responseSerialize(message);
    } catch (error) {
      this.logError(error);
      this.finish({ code: status.INTERNAL, details: 'Error serializing response' });
      return false;
    }
    this.stream.respond(responseHeaders);
    return this.stream.write(lengthPrefixed(payload));
  }

  /** Ends the call with status OK. */
  end(): void {
    this.finish({ code: status.OK, details: '' });
  }

  /** The unary answer: the message, or the error's status. */
  answer(error: CallStatus | null | undefined, value?: unknown): void {
    if (this.ended) return;
    if (error !== null && error !== undefined) return this.finish(statusOf(error));
    this.write(value); // a serializing failure ends the call INTERNAL, and end() does nothing
    this.end();
  }

  /** The client went away (RST_STREAM, connection closed) or the deadline passed. */
  cancel(code: number): void {
    if (this.ended) return;
    this.cancelled = true;
    if (code === status.DEADLINE_EXCEEDED) this.send({ code, details: 'Deadline exceeded' });
    this.emit('cancelled');
    this.close();
  }

  /** Ends the call with `callStatus` (trailers, or a trailers-only answer). */
  finish(callStatus: { code: number; details: string }): void {
    if (this.ended) return;
    this.finished = true;
    this.send(callStatus);
    this.close();
  }

  private send(callStatus: { code: number; details: string }): void {
    if (callStatus.code === status.OK && this.stream.headersSent) return this.stream.end(okTrailers);
    const fields: [string, string][] = [['grpc-status', String(callStatus.code)]];
    if (callStatus.details !== '') fields.push(['grpc-message', percentEncode(callStatus.details)]);
    if (this.stream.headersSent) return this.stream.end(encodeHeaders(null, fields));
    this.stream.end(encodeHeaders(200, [['content-type', 'application/grpc'], ...fields]));
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('close');
  }

  /** Ends the stream outright (a protocol-level refusal after the call started). */
  abort(): void {
    this.stream.cancel(H2Error.cancel);
  }
}

function statusOf(error: CallStatus): { code: number; details: string } {
  const code = typeof error?.code === 'number' && error.code >= 0 && error.code <= 16 ? error.code : status.UNKNOWN;
  const details = typeof error?.details === 'string' ? error.details : typeof error?.message === 'string' ? error.message : 'Unknown error';
  return { code, details };
}

export function lengthPrefixed(payload: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + payload.length);
  out[0] = 0;
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
}

/** gRPC's grpc-message encoding: UTF-8, then %XX for bytes outside printable ASCII and for '%'. */
export function percentEncode(text: string): string {
  if (/^[\x20-\x24\x26-\x7e]*$/.test(text)) return text;
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
