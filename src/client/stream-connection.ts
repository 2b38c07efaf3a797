// The client's one multiplexed WebSocket (/v1/stream): watches, keepalives and stream requests
// share it, so a process holds one connection however many watches it runs. When it drops, it
// reconnects to the next endpoint after a fully jittered delay (no reconnect storm when a node
// dies under many clients) and tells its subscribers, who re-create their watches from their
// last revision. A ping that goes unanswered ends a connection whose peer vanished silently
// (a partition sends no FIN), so a frozen link is noticed within ~2 ping intervals.
import WebSocket from 'ws';
import { TimeoutError, UnavailableError, type BatonError } from '../base/errors.js';
import { monotonicNowMs } from './clock.js';
import type { EndpointSet } from './endpoints.js';
import { ClosedError, errorFromWire } from './errors.js';
import { backoffDelayMs, parseRetryAfterMs } from './retry.js';

/** A frame from the server, as documented in docs/api/stream.md. */
export interface ServerFrame {
  readonly id: string | number | null;
  readonly type: 'result' | 'error' | 'created' | 'events' | 'canceled' | 'leadership';
  readonly [field: string]: unknown;
}

export interface StreamSubscriber {
  /** A frame for this subscriber's id (watch frames). */
  onFrame(frame: ServerFrame): void;
  /** A new connection is open: re-create server-side state (watches). */
  onConnected(): void;
  /** The connection dropped; frames stop until onConnected. */
  onDisconnected(): void;
}

interface Pending {
  resolve(result: unknown): void;
  reject(error: BatonError): void;
  timer: NodeJS.Timeout;
}

const pingIntervalMs = 2_000;
/**
 * Consecutive `unavailable` answers after which the connection moves to another node. A node cut
 * off from its cell's quorum still answers (refusing watches, failing forwarded keepalives); the
 * socket is healthy, so without this the client would keep asking the one node that cannot help.
 */
const unavailableAnswersMax = 3;
const reconnectPolicy = {
  attemptsMax: 0,
  delayMsBase: 100,
  delayMsMax: 3_000,
  deadlineMs: 0,
  attemptTimeoutMs: 5_000,
};

export class StreamConnection {
  private socket: WebSocket | null = null;
  private open = false;
  private closed = false;
  private failures = 0;
  private nextId = 1;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private awaitingPong = false;
  private unavailableAnswers = 0;
  /** The Retry-After of the last refused open, the floor of the next reconnection's delay. */
  private retryAfterMs: number | undefined = undefined;
  private readonly pending = new Map<number, Pending>();
  private readonly subscribers = new Map<string, StreamSubscriber>();
  private readonly openWaiters = new Set<() => void>();
  /** Connections opened so far (1 + reconnections; for tests and metrics). */
  connections = 0;

  constructor(
    private readonly endpoints: EndpointSet,
    private readonly random: () => number,
    /** TLS options for wss:// (the CA, the client certificate): tls-transport.ts. */
    private readonly tls: { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer } = {},
  ) {}

  get connected(): boolean {
    return this.open;
  }

  /** Sends a request frame and resolves with its `result` (rejects with the typed error). */
  async request(frame: Record<string, unknown>, timeoutMs: number): Promise<unknown> {
    const deadlineMs = monotonicNowMs() + timeoutMs;
    await this.waitOpen(timeoutMs);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const remainingMs = Math.max(1, deadlineMs - monotonicNowMs());
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new TimeoutError(`no stream answer in ${timeoutMs} ms (the outcome is unknown)`));
      }, remainingMs);
      this.pending.set(id, { resolve, reject, timer });
      this.send({ ...frame, id });
    });
  }

  /** Opens the connection now (else on first use), e.g. before a session's first renewal. */
  connect(): void {
    this.ensureConnecting();
  }

  /** Registers a subscriber for frames with this id (string ids; requests use integers). */
  subscribe(id: string, subscriber: StreamSubscriber): void {
    this.subscribers.set(id, subscriber);
    this.ensureConnecting();
    if (this.open) subscriber.onConnected();
  }

  unsubscribe(id: string): void {
    this.subscribers.delete(id);
  }

  /** Sends a frame if connected; false when not (the subscriber re-sends on onConnected). */
  send(frame: Record<string, unknown>): boolean {
    if (!this.open || this.socket === null) return false;
    this.socket.send(JSON.stringify(frame));
    return true;
  }

  close(): void {
    this.closed = true;
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    if (this.pingTimer !== null) clearInterval(this.pingTimer);
    this.socket?.terminate();
    this.socket = null;
    this.open = false;
    this.failPending(new ClosedError('the client is closed') as unknown as BatonError);
    for (const wake of this.openWaiters) wake();
    this.openWaiters.clear();
  }

  private async waitOpen(timeoutMs: number): Promise<void> {
    if (this.closed) throw new ClosedError('the client is closed');
    this.ensureConnecting();
    if (this.open) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.openWaiters.delete(wake);
        reject(new UnavailableError(`no stream connection within ${timeoutMs} ms`));
      }, timeoutMs);
      const wake = (): void => {
        clearTimeout(timer);
        this.openWaiters.delete(wake);
        if (this.closed) reject(new ClosedError('the client is closed'));
        else resolve();
      };
      this.openWaiters.add(wake);
    });
  }

  private ensureConnecting(): void {
    if (this.closed || this.socket !== null || this.reconnectTimer !== null) return;
    this.dial();
  }

  private dial(): void {
    const endpoint = this.endpoints.pick();
    const url = `${endpoint.replace(/^http/, 'ws')}/v1/stream`;
    const socket = new WebSocket(url, { handshakeTimeout: 5_000, ...this.tls });
    this.socket = socket;
    socket.on('open', () => {
      if (this.socket !== socket) return;
      this.open = true;
      this.failures = 0;
      this.connections++;
      this.startPings(socket);
      for (const wake of [...this.openWaiters]) wake();
      for (const subscriber of [...this.subscribers.values()]) subscriber.onConnected();
    });
    socket.on('message', (data) => this.onMessage(String(data)));
    socket.on('pong', () => {
      this.awaitingPong = false;
    });
    socket.on('unexpected-response', (_request, response) => {
      // The node refused the open (429 when too many sessions open at once: a storm): its
      // Retry-After is staggered per client, so honouring it spreads the reconnections.
      if (this.socket !== socket) return;
      // Only a 429 carries guidance worth waiting for; any other refusal (a stopping node's 503)
      // moves on to the next endpoint after the usual backoff, as before.
      const header = response.headers['retry-after'];
      if (response.statusCode === 429) this.retryAfterMs = parseRetryAfterMs(typeof header === 'string' ? header : null);
      socket.terminate();
    });
    socket.on('error', () => {
      // 'close' follows and does the work; without this listener the error would be thrown.
    });
    socket.on('close', () => {
      if (this.socket !== socket) return;
      this.onDropped(endpoint);
    });
  }

  private startPings(socket: WebSocket): void {
    if (this.pingTimer !== null) clearInterval(this.pingTimer);
    this.awaitingPong = false;
    this.pingTimer = setInterval(() => {
      if (this.awaitingPong) {
        socket.terminate();
        return;
      }
      this.awaitingPong = true;
      socket.ping();
    }, pingIntervalMs);
    this.pingTimer.unref();
  }

  private onDropped(endpoint: string): void {
    const wasOpen = this.open;
    this.socket = null;
    this.open = false;
    if (this.pingTimer !== null) clearInterval(this.pingTimer);
    this.pingTimer = null;
    const message = `stream to ${endpoint} closed (outcome of requests in flight unknown)`;
    this.failPending(new UnavailableError(message));
    this.endpoints.failed(endpoint);
    if (wasOpen) {
      for (const subscriber of [...this.subscribers.values()]) subscriber.onDisconnected();
    }
    if (this.closed) return;
    const guided = this.retryAfterMs;
    this.retryAfterMs = undefined;
    // Guidance is in whole seconds: a draw within the second keeps clients told the same second apart.
    const delayMs = guided === undefined
      ? backoffDelayMs(reconnectPolicy, this.failures++, this.random)
      : guided + Math.floor(this.random() * 1000);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (!this.closed) this.dial();
    }, delayMs);
  }

  private failPending(error: BatonError): void {
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.reject(error);
      this.pending.delete(id);
    }
  }

  private countUnavailable(frame: ServerFrame): void {
    if (frame.type === 'result' || frame.type === 'created' || frame.type === 'leadership') {
      this.unavailableAnswers = 0;
      return;
    }
    const code = (frame['error'] as { code?: unknown } | undefined)?.code;
    if (frame.type !== 'error' || code !== 'unavailable') return;
    if (++this.unavailableAnswers < unavailableAnswersMax) return;
    this.unavailableAnswers = 0;
    // Closing makes onDropped move to the next endpoint; subscribers re-create their watches there.
    this.socket?.terminate();
  }

  private onMessage(text: string): void {
    let frame: ServerFrame;
    try {
      frame = JSON.parse(text) as ServerFrame;
    } catch {
      return;
    }
    this.countUnavailable(frame);
    if (typeof frame.id === 'number') {
      const pending = this.pending.get(frame.id);
      if (pending === undefined) return;
      this.pending.delete(frame.id);
      clearTimeout(pending.timer);
      if (frame.type === 'result') pending.resolve(frame['result']);
      else pending.reject(errorFromWire(frame['error']));
      return;
    }
    if (typeof frame.id === 'string') this.subscribers.get(frame.id)?.onFrame(frame);
  }
}
