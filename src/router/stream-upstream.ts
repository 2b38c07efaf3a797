// The router's stream relay (stream-relay.ts): one upstream WebSocket to a cell for one client
// connection. Frames wait in a queue until it opens; a member that refuses the connection is
// followed by the next; a cell's refusal meant for the client (a 4xx) is kept as the answer to
// every frame waiting; a silent peer is found by its missing pong.
import type { IncomingMessage } from 'node:http';
import WebSocket, { type RawData } from 'ws';
import type { KeySpan } from '../base/namespaces.js';
import type { StreamRelayLimits, StreamRouting } from './stream-relay.js';
import { refusalOf, type Id } from './stream-frames.js';
import type { UpstreamTlsOptions } from './router-tls.js';

const handshakeTimeoutMs = 5_000;
/** A refusal's body read from a cell that would not open a stream. */
const refusalBytesMax = 64 * 1024;

/** One client frame on its way: kept until answered (a request) or ended (a watch). */
export interface Entry {
  /** The id the upstream knows it by: new at every send (a re-send never meets a late answer). */
  upId: number;
  readonly clientId: Id;
  readonly kind: 'request' | 'watch' | 'observe';
  readonly fields: Readonly<Record<string, unknown>>;
  readonly spans: readonly KeySpan[];
  upstream: Upstream;
  retried: boolean;
  /** A watch created, an observation that sent its first leadership: no longer pending. */
  confirmed: boolean;
  /** A watch: every event at or below this was passed on (-1: not known yet). */
  lastRevision: number;
  /** Cancel asked before the watch was created: sent once it is. */
  cancelWanted: boolean;
}

/** What an upstream asks of the client connection it serves. */
export interface UpstreamOwner {
  readonly limits: StreamRelayLimits;
  readonly authorization: string | undefined;
  readonly isPausingUpstreams: boolean;
  readonly log: (message: string) => void;
  /** The router's client certificate and the cells' CA, for a wss:// (https://) cell. */
  upstreamTls(): UpstreamTlsOptions;
  fromUpstream(upstream: Upstream, text: string): void;
  upstreamGone(upstream: Upstream, why: string, refusal: Record<string, unknown> | null): void;
  upstreamSlow(upstream: Upstream): void;
  upstreamDrained(upstream: Upstream): void;
}

/** The router's stream to one cell for one client connection. */
export class Upstream {
  readonly entries = new Map<number, Entry>();
  private ws: WebSocket | null = null;
  private open = false;
  private closed = false;
  private queue: string[] = [];
  private next = 0;
  private awaitingPong = false;
  /** The cell would not open a stream (a 4xx such as a session storm's 429): its answer. */
  private refusal: Record<string, unknown> | null = null;
  endpoint: string | null = null;
  private readonly written = (): void => {
    if (this.ws !== null && this.ws.bufferedAmount <= this.owner.limits.bufferedBytesHigh) this.owner.upstreamDrained(this);
  };

  constructor(
    private readonly owner: UpstreamOwner,
    readonly cell: string,
    private readonly endpoints: readonly string[],
    private readonly routing: StreamRouting,
  ) {
    this.dial();
  }

  /** Frames waiting for the connection to open. */
  get queued(): number {
    return this.queue.length;
  }

  send(text: string): void {
    if (this.closed) return;
    if (!this.open || this.ws === null) {
      this.queue.push(text);
      return;
    }
    this.ws.send(text, this.written);
    if (this.ws.bufferedAmount > this.owner.limits.bufferedBytesHigh) this.owner.upstreamSlow(this);
  }

  pause(): void {
    if (this.open) this.ws?.pause();
  }

  resume(): void {
    if (this.open) this.ws?.resume();
  }

  /** A peer that vanished silently (no FIN) is noticed by its missing pong. Not while paused: it cannot read one. */
  ping(paused: boolean): void {
    if (!this.open || this.ws === null) return;
    if (paused) {
      this.awaitingPong = false;
      return;
    }
    if (this.awaitingPong) {
      this.owner.log(`stream relay: cell ${this.cell} at ${this.endpoint} did not answer a ping`);
      this.ws.terminate();
      return;
    }
    this.awaitingPong = true;
    this.ws.ping();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    const ws = this.ws;
    this.ws = null;
    if (ws === null) return;
    if (this.open) ws.close(1000, 'the client closed its stream');
    else ws.terminate();
  }

  private dial(): void {
    const endpoint = this.endpoints[this.next++] as string;
    this.endpoint = endpoint;
    const headers: Record<string, string> = {};
    if (this.owner.authorization !== undefined) headers['authorization'] = this.owner.authorization;
    const ws = new WebSocket(`${endpoint.replace(/^http/, 'ws')}/v1/stream`, {
      ...(endpoint.startsWith('https:') ? this.owner.upstreamTls() : {}),
      perMessageDeflate: false,
      handshakeTimeout: handshakeTimeoutMs,
      headers,
    });
    this.ws = ws;
    ws.on('open', () => {
      if (this.ws !== ws) return;
      this.open = true;
      if (this.owner.isPausingUpstreams) ws.pause();
      const queue = this.queue;
      this.queue = [];
      for (const text of queue) this.send(text);
    });
    ws.on('message', (data: RawData) => {
      if (this.ws === ws) this.owner.fromUpstream(this, (data as Buffer).toString('utf8'));
    });
    ws.on('pong', () => {
      this.awaitingPong = false;
    });
    ws.on('unexpected-response', (_request, response: IncomingMessage) => {
      // The cell answered the upgrade without upgrading: a stopping node (5xx) is tried at the
      // next member; a refusal meant for the client (a session storm's 429 with Retry-After, a
      // bad token's 401) is its answer for every frame waiting.
      const status = response.statusCode ?? 0;
      if (status >= 500) {
        ws.terminate();
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= refusalBytesMax) chunks.push(chunk);
      });
      response.on('end', () => {
        this.refusal = refusalOf(status, Buffer.concat(chunks).toString('utf8'), response.headers['retry-after']);
        ws.terminate();
      });
      response.on('error', () => ws.terminate());
    });
    ws.on('error', () => {
      // 'close' follows and does the work.
    });
    ws.on('close', () => {
      if (this.ws !== ws && !this.closed) return;
      const wasOpen = this.open;
      this.open = false;
      if (this.closed) return;
      if (!wasOpen && this.refusal === null) {
        // Never opened: the next member, if any (frames wait in the queue, nothing was sent).
        this.routing.unreachable(this.cell, endpoint);
        if (this.next < this.endpoints.length) {
          this.dial();
          return;
        }
      }
      this.closed = true;
      this.ws = null;
      const why = wasOpen
        ? `the router's stream to cell ${this.cell} at ${endpoint} closed`
        : `no member of cell ${this.cell} accepted a stream from the router`;
      this.owner.log(`stream relay: ${why}`);
      this.owner.upstreamGone(this, why, this.refusal);
    });
  }
}
