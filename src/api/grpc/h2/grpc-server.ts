// A gRPC server on the facade's own HTTP/2 connections (connection.ts): services are added as
// with grpc-js (its ServiceDefinition: path, streaming kinds, codecs; handlers by method name)
// and called the same way, so the facade's handlers did not change when grpc-js's server went.
// Per call: route by :path, check method and content type, the deadline (grpc-timeout), read
// length-prefixed messages (bounded, uncompressed only), run the handler, answer with trailers.
import { createServer, type Server, type Socket } from 'node:net';
import { status, type ServiceDefinition } from '@grpc/grpc-js';
import { assert } from '../../../base/assert.js';
import { H2Connection, defaultH2Limits, type H2Limits } from './connection.js';
import { GrpcCall, type CallCodec, type CallStatus } from './grpc-call.js';
import { encodeHeaders, type HeaderList } from './hpack.js';
import type { H2Stream } from './stream.js';

export interface GrpcServerOptions {
  /** The largest request message; bigger ones are answered RESOURCE_EXHAUSTED. */
  readonly receiveBytesMax: number;
  readonly logError: (error: unknown) => void;
  readonly h2?: H2Limits;
}

type Kind = 'unary' | 'serverStream' | 'clientStream' | 'bidi';
type UnaryHandler = (call: GrpcCall, callback: (error: CallStatus | null, value?: unknown) => void) => void;
type StreamHandler = (call: GrpcCall) => void;

interface Route {
  readonly kind: Kind;
  readonly codec: CallCodec;
  readonly handler: UnaryHandler | StreamHandler;
}

const deadlineSweepMs = 500;

export class GrpcServer {
  private readonly routes = new Map<string, Route>();
  private readonly connections = new Set<H2Connection>();
  /** Calls with a deadline, checked every deadlineSweepMs (clients also cancel at theirs). */
  private readonly timed = new Map<GrpcCall, number>();
  private sweep: NodeJS.Timeout | null = null;
  private listener: Server | null = null;

  constructor(private readonly options: GrpcServerOptions) {}

  /** As grpc-js's addService: methods without a handler answer UNIMPLEMENTED. */
  addService(service: ServiceDefinition, implementation: Record<string, unknown>): void {
    for (const [name, method] of Object.entries(service)) {
      const handler = implementation[name] ?? implementation[String(method.originalName ?? '')];
      if (typeof handler !== 'function') continue;
      assert(!this.routes.has(method.path), `one handler per path (${method.path})`);
      const kind: Kind = method.requestStream
        ? (method.responseStream ? 'bidi' : 'clientStream')
        : (method.responseStream ? 'serverStream' : 'unary');
      const codec = {
        requestDeserialize: method.requestDeserialize as (bytes: Buffer) => unknown,
        responseSerialize: method.responseSerialize as (value: unknown) => Buffer,
      };
      this.routes.set(method.path, { kind, codec, handler: handler as UnaryHandler | StreamHandler });
    }
  }

  listen(host: string, port: number): Promise<number> {
    assert(this.listener === null, 'a server listens once');
    const listener = createServer((socket) => this.accept(socket));
    this.listener = listener;
    return new Promise((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(port, host, () => {
        listener.off('error', reject);
        const address = listener.address();
        resolve(typeof address === 'object' && address !== null ? address.port : port);
      });
    });
  }

  /** No new connections or calls; open calls get `graceMs` to finish, then are cut. */
  async close(graceMs: number): Promise<void> {
    this.listener?.close();
    for (const connection of this.connections) connection.goaway();
    const deadline = performance.now() + graceMs;
    while (this.connections.size > 0 && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    for (const connection of [...this.connections]) connection.destroy();
    if (this.sweep !== null) clearInterval(this.sweep);
    this.sweep = null;
  }

  private accept(socket: Socket): void {
    const connection = new H2Connection(socket, { onStream: (stream, headers, end) => this.onStream(stream, headers, end) },
      this.options.h2 ?? defaultH2Limits);
    this.connections.add(connection);
    connection.onClose = () => this.connections.delete(connection);
  }

  private onStream(stream: H2Stream, headers: HeaderList, endStream: boolean): void {
    let method = '';
    let path = '';
    let contentType = '';
    let timeout = '';
    let encoding = '';
    for (const [name, value] of headers) {
      if (name === ':method') method = value;
      else if (name === ':path') path = value;
      else if (name === 'content-type') contentType = value;
      else if (name === 'grpc-timeout') timeout = value;
      else if (name === 'grpc-encoding') encoding = value;
    }
    // grpc-js's answers to requests that are not gRPC calls: plain HTTP statuses.
    if (method !== 'POST') return stream.end(encodeHeaders(405, []));
    if (!contentType.startsWith('application/grpc')) return stream.end(encodeHeaders(415, []));
    const route = this.routes.get(path);
    const deadlineMs = timeoutMs(timeout);
    const deadline = deadlineMs === null ? Number.POSITIVE_INFINITY : new Date(Date.now() + deadlineMs);
    const call = new GrpcCall(stream, route?.codec ?? nullCodec, deadline, this.options.logError);
    stream.onReset = () => call.cancel(status.CANCELLED);
    stream.onDrain = () => call.emit('drain');
    if (route === undefined) return call.finish({ code: status.UNIMPLEMENTED, details: `The server does not implement the method ${path}` });
    if (deadlineMs !== null) this.track(call, performance.now() + deadlineMs);
    const reader = new MessageReader(this.options.receiveBytesMax, encoding, stream);
    if (route.kind === 'unary' || route.kind === 'serverStream') this.single(stream, call, route, reader, endStream);
    else this.streaming(stream, call, route, reader, endStream);
  }

  /** Unary and server-streaming calls: exactly one request message, then the handler. */
  private single(stream: H2Stream, call: GrpcCall, route: Route, reader: MessageReader, endStream: boolean): void {
    let message: Buffer | null = null;
    let refused = false;
    const refuse = (callStatus: { code: number; details: string }): void => {
      refused = true;
      reader.release();
      call.finish(callStatus);
    };
    stream.onData = (data) => {
      if (refused) return;
      const read = reader.push(data);
      if (!Array.isArray(read)) return refuse(read);
      for (const next of read) {
        if (message !== null) return refuse({ code: status.UNIMPLEMENTED, details: 'a second request message on a unary or server-streaming method' });
        message = next;
      }
    };
    const start = (): void => {
      if (refused || call.ended) return;
      if (message === null || reader.partial) {
        return refuse({ code: status.UNIMPLEMENTED, details: 'no complete request message before the end of the stream' });
      }
      try {
        call.request = route.codec.requestDeserialize(message);
      } catch (error) {
        return refuse({ code: status.INTERNAL, details: `Error deserializing request: ${(error as Error)?.message ?? String(error)}` });
      }
      if (route.kind === 'unary') this.run(call, () => (route.handler as UnaryHandler)(call, (error, value) => call.answer(error, value)));
      else this.run(call, () => (route.handler as StreamHandler)(call));
    };
    stream.onEnd = start;
    if (endStream) start();
  }

  /** Client- and bidi-streaming calls: the handler starts now; messages arrive as 'data'. */
  private streaming(stream: H2Stream, call: GrpcCall, route: Route, reader: MessageReader, endStream: boolean): void {
    stream.onData = (data) => {
      if (call.ended) return;
      const read = reader.push(data);
      if (!Array.isArray(read)) {
        reader.release();
        return call.finish(read);
      }
      for (const message of read) {
        let request: unknown;
        try {
          request = route.codec.requestDeserialize(message);
        } catch (error) {
          return call.finish({ code: status.INTERNAL, details: `Error deserializing request: ${(error as Error)?.message ?? String(error)}` });
        }
        call.emit('data', request);
        if (call.ended) return;
      }
    };
    stream.onEnd = () => {
      if (!call.ended) call.emit('end');
    };
    this.run(call, () => (route.handler as StreamHandler)(call));
    if (endStream && !call.ended) call.emit('end');
  }

  /** A handler that throws is a bug: INTERNAL, logged (grpc-js answers the same). */
  private run(call: GrpcCall, body: () => void): void {
    try {
      body();
    } catch (error) {
      this.options.logError(error);
      call.finish({ code: status.INTERNAL, details: 'the handler failed' });
    }
  }

  private track(call: GrpcCall, atMs: number): void {
    this.timed.set(call, atMs);
    call.once('close', () => this.timed.delete(call));
    this.sweep ??= setInterval(() => this.expire(), deadlineSweepMs);
    this.sweep.unref();
  }

  private expire(): void {
    const now = performance.now();
    for (const [call, atMs] of this.timed) {
      if (atMs <= now) call.cancel(status.DEADLINE_EXCEEDED);
    }
    if (this.timed.size === 0 && this.sweep !== null) {
      clearInterval(this.sweep);
      this.sweep = null;
    }
  }
}

const nullCodec: CallCodec = { requestDeserialize: () => null, responseSerialize: () => Buffer.alloc(0) };

/** grpc-timeout (gRPC over HTTP/2: up to 8 digits and a unit), in ms; null when absent or invalid. */
export function timeoutMs(text: string): number | null {
  const match = /^(\d{1,8})([HMSmun])$/.exec(text);
  if (match === null) return null;
  const scale = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 }[match[2] as 'H'];
  return Number(match[1]) * scale;
}

/**
 * Length-prefixed messages out of DATA payloads. A message that arrives whole in one payload is
 * a view of it (no copy); pieces are held (counted against the connection's bound) until the
 * message is whole, then joined once.
 */
export class MessageReader {
  private parts: Buffer[] = [];
  private partsBytes = 0;
  /** Bytes (prefix included) of the message the held pieces begin; 0 while its prefix is incomplete. */
  private needed = 0;

  constructor(
    private readonly bytesMax: number,
    private readonly encoding: string,
    private readonly stream: H2Stream,
  ) {}

  get partial(): boolean {
    return this.partsBytes > 0;
  }

  /** The messages completed by `data`, or the status that refuses the call. */
  push(data: Buffer): Buffer[] | { code: number; details: string } {
    const messages: Buffer[] = [];
    let input = data;
    if (this.partsBytes > 0) {
      this.hold(data);
      if (this.needed === 0 && this.partsBytes >= 5) {
        const refusal = this.prefix(Buffer.concat(this.parts, this.partsBytes), 0);
        if (typeof refusal !== 'number') return refusal;
        this.needed = 5 + refusal;
      }
      if (this.needed === 0 || this.partsBytes < this.needed) return messages;
      input = Buffer.concat(this.parts, this.partsBytes);
      this.release();
    }
    let at = 0;
    while (input.length - at >= 5) {
      const length = this.prefix(input, at);
      if (typeof length !== 'number') return length;
      if (input.length - at - 5 < length) {
        this.needed = 5 + length;
        break;
      }
      messages.push(input.subarray(at + 5, at + 5 + length));
      at += 5 + length;
    }
    if (at < input.length) this.hold(input.subarray(at));
    return messages;
  }

  /** Gives back the held bytes (the message completed, or the call ended). */
  release(): void {
    if (this.partsBytes > 0) this.stream.buffered(-this.partsBytes);
    this.parts = [];
    this.partsBytes = 0;
    this.needed = 0;
  }

  private hold(piece: Buffer): void {
    this.parts.push(piece);
    this.partsBytes += piece.length;
    this.stream.buffered(piece.length);
  }

  /** The message length in the prefix at `at`, or the status refusing it. */
  private prefix(input: Buffer, at: number): number | { code: number; details: string } {
    const length = input.readUInt32BE(at + 1);
    if (input[at] !== 0) {
      const identity = this.encoding === '' || this.encoding === 'identity';
      return identity
        ? { code: status.INTERNAL, details: 'a compressed message without a grpc-encoding' }
        : { code: status.UNIMPLEMENTED, details: `message compression is not supported (grpc-encoding: ${this.encoding.slice(0, 40)})` };
    }
    if (length > this.bytesMax) return { code: status.RESOURCE_EXHAUSTED, details: `Received message larger than max (${length} vs. ${this.bytesMax})` };
    return length;
  }
}
