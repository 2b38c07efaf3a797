// One gRPC call on an HTTP/2 stream, with the part of grpc-js's server-call API the facade's
// handlers use: `request` (unary and server-streaming calls), 'data' / 'end' events (client
// streams), write() with 'drain', end(), emit('error', status), 'cancelled' and 'close', and
// getDeadline(). Messages are length-prefixed (gRPC over HTTP/2: a flag byte, a u32 length).
// The call is its stream's sink and keeps its listeners itself (no EventEmitter, no closures
// per call: a unary put allocates this object, its reader and its answer).
import { status } from '@grpc/grpc-js';
import { CallEvents } from './call-events.js';
import { H2Error } from './frames.js';
import { encodeHeaders } from './hpack.js';
import { MessageReader } from './message-reader.js';
import type { H2Stream, StreamSink } from './stream.js';
import { principalOfSocket } from '../../principal.js';
import { withSource } from '../../request-source.js';

const responseHeaders = encodeHeaders(200, [['content-type', 'application/grpc']]);
const okTrailers = encodeHeaders(null, [['grpc-status', '0']]);

/** What a handler's error carries (grpc-js's StatusObject shape); anything else is UNKNOWN. */
export interface CallStatus {
  readonly code?: number;
  readonly details?: string;
  readonly message?: string;
  /** When the node said when to come back (#28: tenants' rates, the session gate): a `retry-after` trailer. */
  readonly retryAfterSeconds?: number;
  /** More trailers (lowercase names; `-bin` values base64): wrong_cell's details for routers. */
  readonly trailers?: readonly (readonly [string, string])[];
}

/** A call's final status as sent: code, text and the optional trailers. */
export interface FinalStatus {
  code: number;
  details: string;
  retryAfterSeconds?: number;
  trailers?: readonly (readonly [string, string])[];
}

export type AnswerCallback = (error: CallStatus | null, value?: unknown) => void;

export type CallKind = 'unary' | 'serverStream' | 'clientStream' | 'bidi';

export interface CallRoute {
  readonly kind: CallKind;
  readonly requestDeserialize: (bytes: Buffer) => unknown;
  readonly responseSerialize: (value: unknown) => Buffer;
  /** Unary: (call, callback); the others: (call). */
  readonly handler: (call: GrpcCall, callback: AnswerCallback) => void;
  /** The method's counters (etcd's grpc_server_* and byte totals), bound once per method. */
  readonly meter?: CallMeter;
}

/**
 * What the server counts per method: calls started and handled (by status code), the time to
 * handle one, message bytes in and out. Pre-bound per method: nothing is looked up per call.
 */
export interface CallMeter {
  started(): void;
  handled(code: number, seconds: number): void;
  received(bytes: number): void;
  sent(bytes: number): void;
}

export interface CallContext {
  readonly receiveBytesMax: number;
  readonly logError: (error: unknown) => void;
  /** Told when a call with a deadline ends (the server's deadline sweep forgets it). */
  ended(call: GrpcCall): void;
}

export class GrpcCall extends CallEvents implements StreamSink {
  request: unknown = undefined;
  cancelled = false;
  /**
   * Who calls (src/api/principal.ts): the handlers pass it into every service call. The server
   * replaces it with the user of a valid etcd token (`token` metadata) before any handler runs.
   */
  principal: string;
  private finished = false;
  private closed = false;
  private started = false;
  /** Single-message calls: the request message, once read. */
  private message: Buffer | null = null;
  private readonly reader: MessageReader;
  private readonly answerCallback: AnswerCallback = (error, value) => this.answer(error, value);
  /** performance.now() when the handler ran (the meter's handling time); 0: not yet. */
  private startedAtMs = 0;
  /**
   * Extra response header fields (a router's Baton-Cell and Baton-Routing-Epoch), sent with the
   * first message or a trailers-only answer; set before the first write. null: none.
   */
  responseFields: readonly (readonly [string, string])[] | null = null;

  constructor(
    private readonly stream: H2Stream,
    private readonly route: CallRoute,
    /** Epoch ms; Infinity without one. */
    private readonly deadlineMs: number,
    encoding: string,
    private readonly context: CallContext,
    /** etcd's auth token from the `token` (or `authorization`) metadata, if any. */
    readonly token: string | null = null,
    /** The request's header fields (metadata), as received: a router reads its routing hints here. */
    readonly requestHeaders: readonly (readonly [string, string])[] = [],
  ) {
    super();
    this.principal = principalOfSocket(stream.socket);
    this.reader = new MessageReader(context.receiveBytesMax, encoding, stream);
  }

  getDeadline(): Date | number {
    return Number.isFinite(this.deadlineMs) ? new Date(this.deadlineMs) : Number.POSITIVE_INFINITY;
  }

  get ended(): boolean {
    return this.finished || this.cancelled;
  }

  get single(): boolean {
    return this.route.kind === 'unary' || this.route.kind === 'serverStream';
  }

  /** Starts a streaming-request call at once; a single-message one when its message is in. */
  start(endStream: boolean): void {
    if (!this.single) {
      this.started = true;
      this.runHandler();
      if (endStream) this.onEnd();
    } else if (endStream) {
      this.onEnd();
    }
  }

  // --- StreamSink ---

  onData(data: Buffer): void {
    if (this.ended) return;
    const refusal = this.reader.push(data, this);
    if (refusal !== null) {
      this.reader.release();
      this.finish(refusal);
    }
  }

  /** One whole request message from the reader; false: stop reading (the call ended). */
  takeMessage(bytes: Buffer): boolean {
    this.route.meter?.received(bytes.length + 5);
    if (this.single) {
      if (this.message !== null) {
        const details = 'a second request message on a unary or server-streaming method';
        this.finish({ code: status.UNIMPLEMENTED, details });
        return false;
      }
      this.message = bytes;
      return true;
    }
    const request = this.deserialize(bytes);
    if (request === undefined) return false;
    this.emit('data', request);
    return !this.ended;
  }

  onEnd(): void {
    if (this.ended) return;
    if (!this.single) return void this.emit('end');
    if (this.started) return;
    this.started = true;
    if (this.message === null || this.reader.partial) {
      this.reader.release();
      const details = 'no complete request message before the end of the stream';
      return this.finish({ code: status.UNIMPLEMENTED, details });
    }
    const request = this.deserialize(this.message);
    this.message = null;
    if (request === undefined) return;
    this.request = request;
    this.runHandler();
  }

  onReset(): void {
    this.cancel(status.CANCELLED);
  }

  onDrain(): void {
    this.emit('drain');
  }

  // --- the handler's side ---

  /** One response message; false when the stream's queue is over its high-water mark. */
  write(message: unknown): boolean {
    if (this.ended) return false;
    let payload: Buffer;
    try {
      payload = this.route.responseSerialize(message);
    } catch (error) {
      this.context.logError(error);
      this.finish({ code: status.INTERNAL, details: 'Error serializing response' });
      return false;
    }
    this.stream.respond(this.responseFields === null ? responseHeaders : encodeHeaders(200, [['content-type', 'application/grpc'], ...this.responseFields]));
    this.route.meter?.sent(payload.length + 5);
    return this.stream.write(lengthPrefixed(payload));
  }

  /** Ends the call with status OK. */
  end(): void {
    this.finish({ code: status.OK, details: '' });
  }

  /** As an EventEmitter's; emit('error', status) ends the call with that status first. */
  override emit(event: string, ...args: unknown[]): boolean {
    if (event === 'error') this.finish(statusOf(args[0] as CallStatus));
    return super.emit(event, ...args);
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
    this.reader.release();
    if (code === status.DEADLINE_EXCEEDED) this.send({ code, details: 'Deadline exceeded' });
    else this.countHandled(code);
    this.emit('cancelled');
    this.close();
  }

  /** Ends the call with `callStatus` (trailers, or a trailers-only answer). */
  finish(callStatus: FinalStatus): void {
    if (this.ended) return;
    this.finished = true;
    this.reader.release();
    this.send(callStatus);
    this.close();
  }

  /** Ends the stream outright (a protocol-level refusal after the call started). */
  abort(): void {
    this.stream.cancel(H2Error.cancel);
  }

  private deserialize(bytes: Buffer): unknown {
    try {
      return this.route.requestDeserialize(bytes) ?? null;
    } catch (error) {
      const reason = (error as Error)?.message ?? String(error);
      this.finish({ code: status.INTERNAL, details: `Error deserializing request: ${reason}` });
      return undefined;
    }
  }

  /** A handler that throws is a bug: INTERNAL, logged (grpc-js answers the same). */
  private runHandler(): void {
    const meter = this.route.meter;
    if (meter !== undefined) {
      this.startedAtMs = performance.now();
      meter.started();
    }
    try {
      withSource(this.stream.socket, () => this.route.handler(this, this.answerCallback));
    } catch (error) {
      this.context.logError(error);
      this.finish({ code: status.INTERNAL, details: 'the handler failed' });
    }
  }

  private send(callStatus: FinalStatus): void {
    this.countHandled(callStatus.code);
    if (callStatus.code === status.OK && this.stream.headersSent && callStatus.trailers === undefined) {
      return this.stream.end(okTrailers);
    }
    const fields: (readonly [string, string])[] = [['grpc-status', String(callStatus.code)]];
    if (callStatus.details !== '') fields.push(['grpc-message', percentEncode(callStatus.details)]);
    if (callStatus.retryAfterSeconds !== undefined) fields.push(['retry-after', String(callStatus.retryAfterSeconds)]);
    if (callStatus.trailers !== undefined) fields.push(...callStatus.trailers);
    if (this.stream.headersSent) return this.stream.end(encodeHeaders(null, fields));
    this.stream.end(encodeHeaders(200, [['content-type', 'application/grpc'], ...(this.responseFields ?? []), ...fields]));
  }

  /** Once per call; calls that never reached their handler (a bad request message) count neither way. */
  private countHandled(code: number): void {
    if (this.startedAtMs === 0) return;
    this.route.meter?.handled(code, (performance.now() - this.startedAtMs) / 1000);
    this.startedAtMs = 0;
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    if (Number.isFinite(this.deadlineMs)) this.context.ended(this);
    this.emit('close');
  }
}

/** A handler's error as a status: an unknown code is UNKNOWN, the text from details or message. */
export function statusOf(error: CallStatus): FinalStatus {
  const known = typeof error?.code === 'number' && error.code >= 0 && error.code <= 16;
  const code = known ? (error.code as number) : status.UNKNOWN;
  const details =
    typeof error?.details === 'string' ? error.details
    : typeof error?.message === 'string' ? error.message
    : 'Unknown error';
  const retryAfter = error?.retryAfterSeconds;
  const answer: FinalStatus = typeof retryAfter === 'number' ? { code, details, retryAfterSeconds: retryAfter } : { code, details };
  if (Array.isArray(error?.trailers)) answer.trailers = error.trailers;
  return answer;
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
    const plain = byte >= 0x20 && byte <= 0x7e && byte !== 0x25;
    const hex = byte.toString(16).toUpperCase().padStart(2, '0');
    out += plain ? String.fromCharCode(byte) : `%${hex}`;
  }
  return out;
}
