// A gRPC server on the facade's own HTTP/2 connections (connection.ts): services are added as
// with grpc-js (its ServiceDefinition: path, streaming kinds, codecs; handlers by method name)
// and called the same way, so the facade's handlers did not change when grpc-js's server went.
// Per call: route by :path, check method and content type, the deadline (grpc-timeout), then
// the call (grpc-call.ts) reads its messages, runs the handler and answers with trailers.
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type SecureContextOptions, type TLSSocket } from 'node:tls';
import { status, type ServiceDefinition } from '@grpc/grpc-js';
import { assert } from '../../../base/assert.js';
import { H2Connection, defaultH2Limits, type H2Limits } from './connection.js';
import { GrpcCall, type CallContext, type CallKind, type CallMeter, type CallRoute } from './grpc-call.js';
import { encodeHeaders, type HeaderList } from './hpack.js';
import type { H2Stream } from './stream.js';

export interface GrpcServerOptions {
  /** The largest request message; bigger ones are answered RESOURCE_EXHAUSTED. */
  readonly receiveBytesMax: number;
  readonly logError: (error: unknown) => void;
  readonly h2?: H2Limits;
  /**
   * Connections that do not open with HTTP/2's preface (HTTP/1.1: etcd's JSON gateway shares the
   * gRPC port); without it every connection is HTTP/2.
   */
  readonly otherProtocol?: (socket: Socket) => void;
  /** HTTP/2 requests that are not gRPC calls (etcd's JSON gateway over HTTP/2); without it, 405/415. */
  readonly otherStream?: (stream: H2Stream, headers: HeaderList, endStream: boolean) => void;
  /** The counters of a method (`/etcdserverpb.KV/Range`), made once when its service is added. */
  readonly meterOf?: (service: string, method: string, kind: CallKind) => CallMeter;
}

/** TLS for the listener: the current material (re-read after onReload) and whether clients need a certificate. */
export interface GrpcTls {
  readonly material: { material(): SecureContextOptions; onReload(listener: () => void): void; admit?(socket: TLSSocket): boolean };
  readonly clientCertAuth: boolean;
}

/** "PRI * HTTP/2.0\r\n..." (RFC 9113 3.4): no HTTP/1 method starts with these bytes. */
const h2PrefaceStart = Buffer.from('PRI');

const deadlineSweepMs = 500;
const unimplemented: CallRoute = {
  kind: 'unary',
  requestDeserialize: () => null,
  responseSerialize: () => Buffer.alloc(0),
  handler: () => {},
};

export class GrpcServer implements CallContext {
  private readonly routes = new Map<string, CallRoute>();
  private readonly connections = new Set<H2Connection>();
  /** Connections whose first bytes have not yet told their protocol. */
  private readonly sniffing = new Set<Socket>();
  /** Calls with a deadline, checked every deadlineSweepMs (clients also cancel at theirs). */
  private readonly timed = new Map<GrpcCall, number>();
  private sweep: NodeJS.Timeout | null = null;
  private listener: Server | null = null;
  readonly receiveBytesMax: number;
  readonly logError: (error: unknown) => void;

  constructor(private readonly options: GrpcServerOptions) {
    this.receiveBytesMax = options.receiveBytesMax;
    this.logError = options.logError;
  }

  /** As grpc-js's addService: methods without a handler answer UNIMPLEMENTED. */
  addService(service: ServiceDefinition, implementation: Record<string, unknown>): void {
    for (const [name, method] of Object.entries(service)) {
      const handler = implementation[name] ?? implementation[String(method.originalName ?? '')];
      if (typeof handler !== 'function') continue;
      assert(!this.routes.has(method.path), `one handler per path (${method.path})`);
      const kind: CallKind = method.requestStream
        ? (method.responseStream ? 'bidi' : 'clientStream')
        : (method.responseStream ? 'serverStream' : 'unary');
      this.routes.set(method.path, {
        kind,
        requestDeserialize: method.requestDeserialize as (bytes: Buffer) => unknown,
        responseSerialize: method.responseSerialize as (value: unknown) => Buffer,
        handler: handler as CallRoute['handler'],
        ...this.meterFor(method.path, kind),
      });
    }
  }

  private meterFor(path: string, kind: CallKind): { meter?: CallMeter } {
    const match = /^\/([^/]+)\/([^/]+)$/.exec(path);
    if (this.options.meterOf === undefined || match === null) return {};
    return { meter: this.options.meterOf(match[1] as string, match[2] as string, kind) };
  }

  listen(host: string, port: number, tls?: GrpcTls): Promise<number> {
    assert(this.listener === null, 'a server listens once');
    const listener = tls === undefined ? createServer((socket) => this.accept(socket)) : this.secureListener(tls);
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

  /** TLS: ALPN offers h2 and http/1.1; the first bytes still decide, as on plain TCP. */
  private secureListener(tls: GrpcTls): Server {
    const options = (): SecureContextOptions & { requestCert: boolean; rejectUnauthorized: boolean } => ({
      // As the HTTP listener: a certificate is asked for whenever there is a CA to verify it.
      ...tls.material.material(), requestCert: tls.clientCertAuth || tls.material.material().ca !== undefined, rejectUnauthorized: tls.clientCertAuth,
    });
    // As etcd: h2 first (gRPC, and the gateway over HTTP/2), HTTP/1.1 for clients that offer only it.
    const listener = createTlsServer({ ...options(), ALPNProtocols: ['h2', 'http/1.1'] }, (socket) => {
      if (tls.material.admit?.(socket) !== false) this.accept(socket);
    });
    tls.material.onReload(() => listener.setSecureContext(options()));
    return listener;
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
    for (const socket of this.sniffing) socket.destroy();
    if (this.sweep !== null) clearInterval(this.sweep);
    this.sweep = null;
  }

  /** The route of a method path (/etcdserverpb.KV/Range), for the gateway's calls. */
  route(path: string): CallRoute | undefined {
    return this.routes.get(path);
  }

  /** CallContext: a call with a deadline ended. */
  ended(call: GrpcCall): void {
    this.timed.delete(call);
  }

  private accept(socket: Socket): void {
    const other = this.options.otherProtocol;
    if (other === undefined) return this.open(socket);
    // Read until the first bytes tell HTTP/2 from anything else, then give them back to the socket.
    this.sniffing.add(socket);
    let seen: Buffer = Buffer.alloc(0);
    const gone = (): void => {
      this.sniffing.delete(socket);
      socket.destroy();
    };
    const onData = (chunk: Buffer): void => {
      seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
      const length = Math.min(seen.length, h2PrefaceStart.length);
      const h2 = seen.subarray(0, length).equals(h2PrefaceStart.subarray(0, length));
      if (h2 && seen.length < h2PrefaceStart.length) return;
      socket.off('data', onData);
      socket.off('error', gone);
      socket.off('end', gone);
      this.sniffing.delete(socket);
      socket.pause();
      socket.unshift(seen);
      if (h2) this.open(socket);
      else other(socket);
      process.nextTick(() => socket.resume());
    };
    socket.on('data', onData);
    socket.on('error', gone);
    socket.on('end', gone);
  }

  private open(socket: Socket): void {
    const connection = new H2Connection(socket, this, this.options.h2 ?? defaultH2Limits);
    this.connections.add(connection);
    connection.onClose = () => this.connections.delete(connection);
  }

  /** H2Handler: a request stream's headers. */
  onStream(stream: H2Stream, headers: HeaderList, endStream: boolean): void {
    let method = '';
    let path = '';
    let contentType = '';
    let timeout = '';
    let encoding = '';
    let token: string | null = null;
    for (const [name, value] of headers) {
      if (name === ':method') method = value;
      else if (name === ':path') path = value;
      else if (name === 'content-type') contentType = value;
      else if (name === 'grpc-timeout') timeout = value;
      else if (name === 'grpc-encoding') encoding = value;
      else if ((name === 'token' || name === 'authorization') && value !== '') token = value;
    }
    if (!contentType.startsWith('application/grpc') && this.options.otherStream !== undefined) {
      return this.options.otherStream(stream, headers, endStream);
    }
    // grpc-js's answers to requests that are not gRPC calls: plain HTTP statuses.
    if (method !== 'POST') return stream.end(encodeHeaders(405, []));
    if (!contentType.startsWith('application/grpc')) return stream.end(encodeHeaders(415, []));
    const route = this.routes.get(path);
    const relativeMs = timeoutMs(timeout);
    const deadlineMs = relativeMs === null ? Number.POSITIVE_INFINITY : Date.now() + relativeMs;
    const call = new GrpcCall(stream, route ?? unimplemented, deadlineMs, encoding, this, token, headers);
    stream.sink = call;
    if (route === undefined) {
      const details = `The server does not implement the method ${path}`;
      return call.finish({ code: status.UNIMPLEMENTED, details });
    }
    if (relativeMs !== null) this.track(call, performance.now() + relativeMs);
    call.start(endStream);
  }

  private track(call: GrpcCall, atMs: number): void {
    this.timed.set(call, atMs);
    if (this.sweep === null) {
      this.sweep = setInterval(() => this.expire(), deadlineSweepMs);
      this.sweep.unref();
    }
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

/** grpc-timeout (up to 8 digits and a unit, gRPC over HTTP/2), in ms; null if absent or invalid. */
export function timeoutMs(text: string): number | null {
  if (text === '') return null;
  const match = /^(\d{1,8})([HMSmun])$/.exec(text);
  if (match === null) return null;
  const scale = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 }[match[2] as 'H'];
  return Number(match[1]) * scale;
}
