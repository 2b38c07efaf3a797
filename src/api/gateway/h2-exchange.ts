// An HTTP/2 request stream on the facade's own HTTP/2 server (grpc/h2) that is not a gRPC call
// (its content type is not application/grpc: curl --http2, Go's HTTP/2 client), as the request and
// response the gateway serves: etcd serves its gateway over HTTP/1.1 and HTTP/2 on one port.
import type { Socket } from 'node:net';
import type { H2Stream, StreamSink } from '../grpc/h2/stream.js';
import { CallEvents } from '../grpc/h2/call-events.js';
import { H2Error } from '../grpc/h2/frames.js';
import { encodeHeaders, type HeaderList } from '../grpc/h2/hpack.js';
import type { GatewayRequest, GatewayResponse } from './gateway-call.js';

class H2Exchange extends CallEvents implements GatewayRequest, GatewayResponse, StreamSink {
  readonly url: string;
  readonly method: string;
  readonly socket: Socket;
  readonly headers: Record<string, string>;
  private ended = false;
  private closed = false;

  constructor(private readonly stream: H2Stream, headers: HeaderList) {
    super();
    this.socket = stream.socket;
    let path = '/';
    let method = 'GET';
    this.headers = {};
    for (const [name, value] of headers) {
      if (name === ':path') path = value;
      else if (name === ':method') method = value;
      else if (!name.startsWith(':')) this.headers[name] = value;
    }
    this.url = path;
    this.method = method;
  }

  get headersSent(): boolean {
    return this.stream.headersSent;
  }

  resume(): this {
    return this; // data is delivered as it comes; nothing is paused
  }

  destroy(): this {
    this.stream.cancel(H2Error.cancel);
    this.close();
    return this;
  }

  writeHead(status: number, headers: Record<string, string | number>): this {
    // HTTP/2 names are lower case; connection-specific fields have no place in it (RFC 9113 8.2.2).
    const fields = Object.entries(headers)
      .map(([name, value]): [string, string] => [name.toLowerCase(), String(value)])
      .filter(([name]) => !['connection', 'keep-alive', 'transfer-encoding'].includes(name));
    this.stream.respond(encodeHeaders(status, fields));
    return this;
  }

  write(chunk: string): boolean {
    return this.stream.write(Buffer.from(chunk));
  }

  end(chunk?: string): this {
    if (chunk !== undefined && chunk !== '') this.stream.write(Buffer.from(chunk));
    // An empty trailer block carries END_STREAM.
    this.stream.end(encodeHeaders(null, []));
    this.close();
    return this;
  }

  // --- StreamSink: the client's side ---

  onData(data: Buffer): void {
    this.emit('data', data);
  }

  onEnd(): void {
    if (this.ended) return;
    this.ended = true;
    this.emit('end');
  }

  onReset(): void {
    this.close();
  }

  onDrain(): void {
    this.emit('drain');
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('close');
  }
}

/** Serves one HTTP/2 stream with the gateway's handler. */
export function serveH2Gateway(
  stream: H2Stream,
  headers: HeaderList,
  endStream: boolean,
  handler: (req: GatewayRequest, res: GatewayResponse) => void,
): void {
  const exchange = new H2Exchange(stream, headers);
  stream.sink = exchange;
  handler(exchange, exchange);
  if (endStream) exchange.onEnd();
}
