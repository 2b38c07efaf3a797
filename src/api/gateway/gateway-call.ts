// One gateway request as the gRPC call the facade's handlers already serve (the part of
// grpc-js's server-call API they use, as h2/grpc-call.ts offers it): `request`, 'data' / 'end'
// for streamed requests, write() with 'drain', end(), emit('error', status), 'cancelled' and
// getDeadline(). Messages cross as protobuf bytes through the route's own codecs, so an answer
// is exactly what a gRPC client would get, then rendered as etcd's gateway JSON.
import { status } from '@grpc/grpc-js';
import { CallEvents } from '../grpc/h2/call-events.js';
import { statusOf, type CallRoute, type CallStatus } from '../grpc/h2/grpc-call.js';
import { httpStatusOf, streamErrorLine, unaryErrorBody, type GatewayStatus } from './errors.js';
import { answerJson, requestBytes, valueJson } from './json-codec.js';
import type { GatewayRoute } from './routes.js';
import type { Socket } from 'node:net';
import { withSource } from '../request-source.js';

/** The part of an HTTP exchange the gateway uses: node:http's objects, or an HTTP/2 stream's (h2-exchange.ts). */
export interface GatewayRequest {
  /** The connection's socket: its TLS peer names the caller (src/api/principal.ts). */
  readonly socket: Socket;
  /** Request headers (node:http's lower-cased names): the gateway reads `authorization`, etcd's token. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly url?: string | undefined;
  readonly method?: string | undefined;
  on(event: 'data', listener: (chunk: Buffer) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  resume(): unknown;
  destroy(): unknown;
}

export interface GatewayResponse {
  readonly headersSent: boolean;
  writeHead(status: number, headers: Record<string, string | number>): unknown;
  write(chunk: string): boolean;
  end(chunk?: string): unknown;
  on(event: 'drain' | 'close', listener: () => void): unknown;
}

/** etcd's gateway sends these on every answer (its CORS wrapper). */
export const gatewayHeaders: Readonly<Record<string, string>> = {
  'access-control-allow-headers': 'accept, content-type, authorization',
  'access-control-allow-methods': 'POST, GET, OPTIONS, PUT, DELETE',
  'access-control-allow-origin': '*',
};

export class GatewayCall extends CallEvents {
  request: unknown = undefined;
  cancelled = false;
  private finished = false;

  constructor(
    private readonly route: GatewayRoute,
    private readonly callRoute: CallRoute,
    private readonly res: GatewayResponse,
    private readonly logError: (error: unknown) => void,
    /** Who calls, as on the gRPC port (src/api/principal.ts); the server replaces it with a token's user. */
    public principal: string,
    /** etcd's token, from the Authorization header (grpc-gateway passes it on as metadata). */
    readonly token: string | null,
    /** The caller's connection: its address goes into the audit record of a write (request-source.ts). */
    private readonly sourceSocket: Socket | null = null,
  ) {
    super();
    res.on('drain', () => this.emit('drain'));
    res.on('close', () => {
      if (!this.finished) this.cancel();
    });
  }

  get ended(): boolean {
    return this.finished || this.cancelled;
  }

  /** A JSON request message through the route's own decoder (throws GatewayInputError). */
  decode(json: unknown): unknown {
    return this.callRoute.requestDeserialize(requestBytes(this.route.requestType, json)) ?? null;
  }

  /** Runs the handler: unary calls answer through the callback, streams through write/end. */
  run(): void {
    try {
      withSource(this.sourceSocket, () => this.callRoute.handler(this as never, (error, value) => this.answer(error, value)));
    } catch (error) {
      this.logError(error);
      this.fail({ code: status.INTERNAL, details: 'the handler failed' });
    }
  }

  /** A streamed request message (bidi and client-streaming calls). */
  push(request: unknown): void {
    if (!this.ended) this.emit('data', request);
  }

  getDeadline(): Date | number {
    return Number.POSITIVE_INFINITY;
  }

  /** One streamed answer as a `{"result": ...}` line; false when the socket's buffer is full. */
  write(message: unknown): boolean {
    if (this.ended) return false;
    const json = this.toJson(message);
    if (json === null) return false;
    this.streamHead();
    return this.res.write(`{"result":${json}}\n`);
  }

  end(): void {
    if (this.ended) return;
    this.finished = true;
    this.streamHead();
    this.res.end();
    this.emit('close');
  }

  /** emit('error', status) ends the call with that status first, as a gRPC call does. */
  override emit(event: string, ...args: unknown[]): boolean {
    if (event === 'error') this.fail(statusOf(args[0] as CallStatus));
    return super.emit(event, ...args);
  }

  /** The client went away before the answer. */
  cancel(): void {
    if (this.ended) return;
    this.cancelled = true;
    this.emit('cancelled');
    this.emit('close');
  }

  /** A failure: a unary call's error answer, or a stream's error line. */
  fail(failure: GatewayStatus): void {
    if (this.ended) return;
    this.finished = true;
    if (this.route.responseStream) {
      this.streamHead();
      this.res.end(streamErrorLine(failure));
    } else {
      const body = unaryErrorBody(failure);
      const retryAfter: Record<string, string> = failure.retryAfterSeconds === undefined ? {} : { 'retry-after': String(failure.retryAfterSeconds) };
      this.res.writeHead(httpStatusOf(failure.code), { ...gatewayHeaders, ...retryAfter, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      this.res.end(body);
    }
    this.emit('close');
  }

  private answer(error: CallStatus | null | undefined, value?: unknown): void {
    if (this.ended) return;
    if (error !== null && error !== undefined) return this.fail(statusOf(error));
    const json = this.toJson(value);
    if (json === null) return;
    this.finished = true;
    this.res.writeHead(200, { ...gatewayHeaders, 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
    this.res.end(json);
    this.emit('close');
  }

  private streamHead(): void {
    if (this.res.headersSent) return;
    // grpc-gateway answers a stream 200 at once and reports a later failure in the body.
    this.res.writeHead(200, { ...gatewayHeaders, 'content-type': 'application/json', 'grpc-metadata-content-type': 'application/grpc' });
  }

  /** The answer as gateway JSON, through the route's encoder; null (call failed INTERNAL) if it cannot be. */
  private toJson(message: unknown): string | null {
    try {
      return JSON.stringify(valueJson(this.route.responseType, message as Record<string, unknown>));
    } catch {
      // An answer shape the direct path does not know: through its encoder, as a gRPC client gets it.
    }
    try {
      return JSON.stringify(answerJson(this.route.responseType, this.callRoute.responseSerialize(message)));
    } catch (error) {
      this.logError(error);
      this.fail({ code: status.INTERNAL, details: 'Error serializing response' });
      return null;
    }
  }
}
