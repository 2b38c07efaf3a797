// The router's gRPC connections to the cells' facades: one grpc-js client (one HTTP/2 connection)
// per member URL, kept while the router runs. Messages pass as raw bytes both ways: the router
// decodes a request only to read its keys, and never re-encodes what it relays (Watch creates
// aside, whose watch id it sets). https:// members are reached with the router's own client
// certificate and CA (the material of its HTTP forwarding, src/router/router-tls.ts).
import { Client, credentials, Metadata, status, type ChannelCredentials, type ServiceError } from '@grpc/grpc-js';
import type { UpstreamTlsOptions } from '../router/router-tls.js';

const identity = (bytes: Buffer): Buffer => bytes;

/** The client's side of a relayed call, as far as the upstream call needs it. */
export interface Cancellable {
  on(event: 'cancelled', listener: () => void): unknown;
}

/** The options of every upstream channel: the relay bounds nothing itself; the cells do. */
const channelOptions = {
  'grpc.max_receive_message_length': -1,
  'grpc.max_send_message_length': -1,
  // A member that stops answering pings is dropped, so the next call tries another.
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 5_000,
};

/** Metadata a client sends that the cell must see: etcd's token (and an Authorization header). */
const forwardedMetadata = new Set(['token', 'authorization']);

export class CellChannels {
  private readonly clients = new Map<string, Client>();

  constructor(private readonly tls: () => UpstreamTlsOptions) {}

  /** The client of one member's facade (`http://host:port` or `https://host:port`). */
  client(url: string): Client {
    let client = this.clients.get(url);
    if (client === undefined) {
      const parsed = new URL(url);
      const secure = parsed.protocol === 'https:';
      client = new Client(parsed.host, secure ? this.credentials() : credentials.createInsecure(), channelOptions);
      this.clients.set(url, client);
    }
    return client;
  }

  /** One unary call; a client that goes away (`cancelled`) cancels it at the cell too (a waiting Lock). */
  unary(url: string, path: string, request: Buffer, metadata: Metadata, deadline: Date | number, caller: Cancellable): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const upstream = this.client(url).makeUnaryRequest(path, identity, identity, request, metadata, { deadline }, (error, value) => {
        if (error !== null) reject(error);
        else resolve(value as Buffer);
      });
      caller.on('cancelled', () => upstream.cancel());
    });
  }

  serverStream(url: string, path: string, request: Buffer, metadata: Metadata, deadline: Date | number) {
    return this.client(url).makeServerStreamRequest(path, identity, identity, request, metadata, { deadline });
  }

  bidi(url: string, path: string, metadata: Metadata, deadline: Date | number) {
    return this.client(url).makeBidiStreamRequest(path, identity, identity, metadata, { deadline });
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }

  private credentials(): ChannelCredentials {
    const material = this.tls();
    const bytes = (value: unknown): Buffer | null => {
      if (value === undefined || value === null) return null;
      if (Array.isArray(value)) return Buffer.concat(value.map((v) => Buffer.from(v as string)));
      return Buffer.from(value as string);
    };
    return credentials.createSsl(bytes(material.ca), bytes(material.key), bytes(material.cert));
  }
}

/** The client's metadata the cell must see, from the call's request header fields. */
export function forwardMetadata(fields: readonly (readonly [string, string])[]): Metadata {
  const metadata = new Metadata();
  for (const [name, value] of fields) {
    if (forwardedMetadata.has(name)) metadata.add(name, value);
  }
  return metadata;
}

/** The first value of a metadata field a client sent (`baton-namespace`, `baton-cell`). */
export function metadataValue(fields: readonly (readonly [string, string])[], name: string): string | undefined {
  for (const [field, value] of fields) {
    if (field === name) return value;
  }
  return undefined;
}

/**
 * True when the call never reached the member (refused, unreachable): only then is another member
 * tried, as the HTTP router tries one. grpc-js says so only in its words: UNAVAILABLE before any
 * answer, with no status from the server.
 */
export function neverArrived(error: unknown): boolean {
  const failure = error as Partial<ServiceError>;
  if (failure.code !== status.UNAVAILABLE) return false;
  return /No connection established|ECONNREFUSED|EHOSTUNREACH|ENOTFOUND|EADDRNOTAVAIL/.test(failure.details ?? '');
}
