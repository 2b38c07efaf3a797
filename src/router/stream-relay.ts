// The router's WebSocket stream (GET /v1/stream, docs/api/stream.md; docs/design/cells.md "The
// router's stream"). A client holds one connection to the router; the router opens, lazily, at
// most one upstream stream per cell that connection uses (to the cell's leader where known, else
// the next member when a connection is refused) and relays frames:
//
// - Each client frame goes to the cell owning every key it names (the rules of routeTarget:
//   put/get/delete key and prefix, txn compares and both branches, watch key and prefix, locks
//   and elections by their queue prefix, keepalive by the upgrade's Baton-Namespace, else the
//   root's cell); a frame over several cells is answered cross_cell here and sent nowhere.
// - Ids are rewritten on the upstream side: every frame sent to a cell carries a router-chosen
//   integer, unique on the client connection, mapped back to the client's id in the answer. So
//   duplicate client request ids, and a frame re-sent after wrong_cell, never share an answer.
//   A watch (or an election observation) keeps its upstream id while it lives; cancel/progress
//   go to the upstream that holds it, under that id.
// - A request (or a watch not yet created) answered wrong_cell corrects the map cache and is
//   re-sent once, at once, to the new owner (the frame is kept until answered). A watch that is
//   ended with wrong_cell (its namespace moved) is passed on: the client resumes there.
// - An upstream that closes or fails answers each frame pending on it `unavailable` and ends each
//   of its watches `unavailable` with `lastRevision` (the client resumes from lastRevision + 1);
//   the next frame for that cell opens a new upstream.
// - Bounds as the node's (src/base/limits.ts): frames pending per client connection
//   (`overloaded` past it), watches per client connection (`quota_exceeded`), frame size; a
//   client over the high mark of unread output pauses reading from its upstreams, an upstream
//   over it pauses reading from the client; a client that stops reading altogether is cut off.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer, type RawData } from 'ws';
import { BatonError, InvalidArgumentError, OverloadedError, QuotaExceededError, UnavailableError } from '../base/errors.js';
import {
  requestBytesMax,
  streamFrameFramingBytes,
  streamRequestsInFlightMax,
  streamSocketBufferedBytesHigh,
  streamSocketBufferedBytesMax,
  watchersPerConnectionMax,
} from '../base/limits.js';
import type { KeySpan } from '../base/namespaces.js';
import type { MapNamespace } from '../control/cell-map.js';
import type { RouterMetrics } from './router-metrics.js';
import {
  closeGraceMs, controlTypes, eventsRevision, framePrefix, keyedTypes, knownTypes, parseFrame, refuse, salvageId, spansOf, type Id,
} from './stream-frames.js';
import { Upstream, type Entry, type UpstreamOwner } from './stream-upstream.js';
import type { UpstreamTlsOptions } from './router-tls.js';

/** What the relay asks of the router: routing decisions and what it knows of each cell. */
export interface StreamRouting {
  /** The one cell owning every namespace the spans touch; throws cross_cell (or unavailable: no map). */
  choose(spans: readonly KeySpan[]): { readonly namespace: MapNamespace; readonly endpoints: readonly string[] };
  /** The cell's endpoints in the order to try: its known leader first. */
  order(cell: string, endpoints: readonly string[]): string[];
  /** A connection to this endpoint was refused: it is not the cell's leader any more. */
  unreachable(cell: string, endpoint: string): void;
  /** A wrong_cell answer's details: true when the cache took them (MapCache.correct). */
  correct(details: Record<string, unknown>): boolean;
  /** The map epoch, for the upgrade answer's Baton-Routing-Epoch. */
  epoch(): number;
}

export interface StreamRelayOptions {
  readonly routing: StreamRouting;
  readonly metrics: RouterMetrics;
  readonly log?: ((message: string) => void) | undefined;
  /** Bounds; the node's by default (tests lower them). */
  readonly limits?: Partial<StreamRelayLimits>;
  /** The client certificate, key and CA for wss:// upstreams (router-tls.ts); absent: none. */
  readonly upstreamTls?: () => UpstreamTlsOptions;
}

export interface StreamRelayLimits {
  readonly frameBytesMax: number;
  readonly pendingMax: number;
  readonly watchesMax: number;
  readonly bufferedBytesHigh: number;
  readonly bufferedBytesMax: number;
  /** An upstream that does not answer a ping within this long is closed (a silent peer). */
  readonly pingIntervalMs: number;
}

const defaultLimits: StreamRelayLimits = {
  frameBytesMax: requestBytesMax + streamFrameFramingBytes,
  pendingMax: streamRequestsInFlightMax,
  watchesMax: watchersPerConnectionMax,
  bufferedBytesHigh: streamSocketBufferedBytesHigh,
  bufferedBytesMax: streamSocketBufferedBytesMax,
  pingIntervalMs: 5_000,
};


export class StreamRelay {
  private readonly wss: WebSocketServer;
  private readonly clients = new Set<ClientStream>();
  private readonly limits: StreamRelayLimits;
  private readonly pingTimer: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly options: StreamRelayOptions) {
    this.limits = { ...defaultLimits, ...options.limits };
    this.wss = new WebSocketServer({ noServer: true, maxPayload: this.limits.frameBytesMax, perMessageDeflate: false });
    this.wss.on('wsClientError', (error: Error, socket: Duplex) => {
      refuse(socket, new InvalidArgumentError(`invalid stream handshake: ${error.message}`), options.routing.epoch());
    });
    this.wss.on('headers', (headers: string[]) => headers.push(`Baton-Routing-Epoch: ${options.routing.epoch()}`));
    this.pingTimer = setInterval(() => {
      for (const client of this.clients) client.ping();
    }, this.limits.pingIntervalMs);
    this.pingTimer.unref();
  }

  counts(): { connections: number; upstreams: number } {
    let upstreams = 0;
    for (const client of this.clients) upstreams += client.upstreamCount;
    return { connections: this.clients.size, upstreams };
  }

  /** The endpoints the relay's upstreams are connected to, by cell (tests, status). */
  upstreamEndpoints(): { cell: string; endpoint: string }[] {
    return [...this.clients].flatMap((client) => client.upstreamEndpoints());
  }

  /** The HTTP server's 'upgrade': /v1/stream is relayed, any other upgrade refused as a node refuses it. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const raw = req.url ?? '/';
    const question = raw.indexOf('?');
    const path = question < 0 ? raw : raw.slice(0, question);
    const epoch = this.options.routing.epoch();
    if (path !== '/v1/stream') {
      refuse(socket, new InvalidArgumentError(`no upgrade at ${path.slice(0, 200)}: only GET /v1/stream upgrades (to websocket); send other requests without an Upgrade header`), epoch);
      return;
    }
    if (this.stopped) {
      refuse(socket, new UnavailableError('the router is stopping'), epoch);
      return;
    }
    // As the HTTP API's lease routes: a lease lives in one cell, named by a namespace.
    const header = req.headers['baton-namespace'];
    const namespace = typeof header === 'string' && header.startsWith('/') ? header : '/';
    const authorization = req.headers.authorization;
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      if (this.stopped) {
        ws.close(1001, 'the router is stopping');
        return;
      }
      const client = new ClientStream(ws, namespace, authorization, this.options, this.limits, () => this.clients.delete(client));
      this.clients.add(client);
    });
  }

  /** The router stops: every watch and pending frame is ended `unavailable`, then every connection closes. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.pingTimer);
    for (const client of [...this.clients]) client.stop();
    this.wss.close();
  }
}

class ClientStream implements UpstreamOwner {
  private readonly upstreams = new Map<string, Upstream>();
  /** Open (or being created) watches and observations, by the JSON text of the client's id. */
  private readonly watches = new Map<string, Entry>();
  private readonly observes = new Map<string, Entry>();
  private nextUpId = 1;
  /** Requests and subscriptions not yet confirmed. */
  private pending = 0;
  private closed = false;
  /** The client holds more unread output than the high mark: the upstreams are not read. */
  private upstreamsPaused = false;
  /** Upstreams holding more unsent input than the high mark: the client is not read. */
  private readonly slowUpstreams = new Set<Upstream>();
  private readonly written = (): void => this.onWritten();

  constructor(
    private readonly ws: WebSocket,
    /** Where a keepalive's leases live (the upgrade's Baton-Namespace, else the root). */
    private readonly namespace: string,
    readonly authorization: string | undefined,
    private readonly options: StreamRelayOptions,
    readonly limits: StreamRelayLimits,
    private readonly forget: () => void,
  ) {
    ws.on('message', (data: RawData, isBinary: boolean) => this.onMessage(data as Buffer, isBinary));
    ws.on('close', () => this.cleanup());
    ws.on('error', (error: Error & { code?: string }) => {
      // As the node: a frame ws refuses (over the size limit, bad opcode, invalid UTF-8) has its
      // close frame sent already; let the client read it, bounded. Anything else ends it now.
      if (typeof error.code === 'string' && error.code.startsWith('WS_ERR_')) setTimeout(() => ws.terminate(), closeGraceMs).unref();
      else ws.terminate();
    });
  }

  /** What a wss:// upstream presents and trusts (the router's client certificate, the cells' CA). */
  upstreamTls(): UpstreamTlsOptions {
    return this.options.upstreamTls?.() ?? {};
  }

  get upstreamCount(): number {
    return this.upstreams.size;
  }

  upstreamEndpoints(): { cell: string; endpoint: string }[] {
    return [...this.upstreams.values()].filter((u) => u.endpoint !== null).map((u) => ({ cell: u.cell, endpoint: u.endpoint as string }));
  }

  get log(): (message: string) => void {
    return this.options.log ?? (() => {});
  }

  get isPausingUpstreams(): boolean {
    return this.upstreamsPaused;
  }

  ping(): void {
    for (const upstream of this.upstreams.values()) upstream.ping(this.upstreamsPaused);
  }

  stop(): void {
    if (this.closed) return;
    for (const upstream of [...this.upstreams.values()]) this.endAll(upstream, 'the router is stopping: resume on another router');
    this.ws.close(1001, 'the router is stopping');
    setTimeout(() => this.ws.terminate(), closeGraceMs).unref();
    this.cleanup();
  }

  // --- From the client ---------------------------------------------------------------------------

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (this.closed) return;
    if (isBinary) {
      this.answerError(null, new InvalidArgumentError('frames are JSON text, not binary'));
      return;
    }
    const text = data.toString('utf8');
    let frame: { id: Id; type: string; fields: Record<string, unknown> };
    try {
      frame = parseFrame(text);
    } catch (error) {
      this.answerError(salvageId(text), error);
      return;
    }
    try {
      this.route(frame.id, frame.type, frame.fields);
    } catch (error) {
      this.answerError(frame.id, error);
    }
  }

  private route(id: Id, type: string, fields: Record<string, unknown>): void {
    const control = controlTypes.get(type);
    if (control !== undefined) {
      this.control(id, type, control, fields);
      return;
    }
    const kind = keyedTypes.get(type);
    if (kind === undefined) throw new InvalidArgumentError(`unknown frame type "${type}"; known: ${knownTypes.join(', ')}`);
    if (this.pending >= this.limits.pendingMax) throw new OverloadedError(`more than ${this.pending} requests in flight on this stream`);
    const key = JSON.stringify(id);
    if (kind === 'watch') {
      if (this.watches.has(key)) throw new InvalidArgumentError(`a watch with id ${key} is already open on this stream`);
      if (this.watches.size >= this.limits.watchesMax) {
        throw new QuotaExceededError(`this connection has ${this.watches.size} watchers, its limit`, { limit: this.limits.watchesMax });
      }
    }
    if (kind === 'observe' && this.observes.has(key)) throw new InvalidArgumentError(`an observation with id ${key} is already open`);
    const spans = spansOf(type, fields, this.namespace);
    // cross_cell (or no map yet) is thrown here: answered for this id, nothing is sent anywhere.
    const chosen = this.options.routing.choose(spans);
    const entry = { upId: 0, clientId: id, kind, fields, spans, retried: false, confirmed: false, lastRevision: -1, cancelWanted: false } as Omit<Entry, 'upstream'> as Entry;
    if (kind === 'watch') this.watches.set(key, entry);
    if (kind === 'observe') this.observes.set(key, entry);
    this.pending++;
    this.dispatch(entry, chosen.namespace.cell, chosen.endpoints);
  }

  /** cancel, progress, observeCancel: to the upstream holding the watch, under its upstream id. */
  private control(id: Id, type: string, kind: 'watch' | 'observe', fields: Record<string, unknown>): void {
    for (const name of Object.keys(fields)) {
      if (name !== 'id' && name !== 'type') throw new InvalidArgumentError(`unknown field "${name}" in a ${type} frame`);
    }
    const key = JSON.stringify(id);
    const entry = (kind === 'watch' ? this.watches : this.observes).get(key);
    if (entry === undefined) throw new InvalidArgumentError(kind === 'watch' ? `no open watch with id ${key}` : `no observation with id ${key}`);
    if (type !== 'progress' && !entry.confirmed) {
      // Not created yet (maybe being re-sent to another cell): cancel once it is.
      entry.cancelWanted = true;
      return;
    }
    if (entry.upstream.queued >= this.limits.pendingMax) throw new OverloadedError(`more than ${entry.upstream.queued} frames wait for cell ${entry.upstream.cell} on this stream`);
    this.options.metrics.streamFrame(entry.upstream.cell);
    entry.upstream.send(`{"id":${entry.upId},"type":"${type}"}`);
  }

  private dispatch(entry: Entry, cell: string, endpoints: readonly string[]): void {
    let upstream = this.upstreams.get(cell);
    if (upstream === undefined) {
      const order = this.options.routing.order(cell, endpoints);
      if (order.length === 0) {
        this.answerError(entry.clientId, new UnavailableError(`no endpoints known for cell ${cell}`, { cell }));
        this.forgetEntry(entry);
        return;
      }
      upstream = new Upstream(this, cell, order, this.options.routing);
      this.upstreams.set(cell, upstream);
    }
    entry.upId = this.nextUpId++;
    entry.upstream = upstream;
    upstream.entries.set(entry.upId, entry);
    this.options.metrics.streamFrame(cell);
    upstream.send(JSON.stringify({ ...entry.fields, id: entry.upId }));
  }

  // --- From an upstream --------------------------------------------------------------------------

  fromUpstream(upstream: Upstream, text: string): void {
    if (this.closed) return;
    // The node writes `{"id":N,"type":"T",...` (id first, then type): read both without parsing a
    // large result or events batch; anything else is parsed whole.
    const head = framePrefix.exec(text);
    let upId: number;
    let type: string;
    let rest: string | null = null;
    let parsed: Record<string, unknown> | null = null;
    if (head !== null) {
      upId = Number(head[1]);
      type = head[2] as string;
      rest = text.slice(head[1]!.length + 6);
    } else {
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        this.log(`stream relay: unreadable frame from cell ${upstream.cell}`);
        return;
      }
      if (typeof parsed['id'] !== 'number') {
        // Not an answer to anything the router sent (it sends only well-formed frames).
        this.log(`stream relay: a frame from cell ${upstream.cell} with id ${JSON.stringify(parsed['id'])}: dropped`);
        return;
      }
      upId = parsed['id'];
      type = String(parsed['type']);
    }
    const entry = upstream.entries.get(upId);
    if (entry === undefined) return; // a late answer (re-sent elsewhere, or ended)
    const relayed = (): string => (rest !== null ? `{"id":${JSON.stringify(entry.clientId)}${rest}` : JSON.stringify({ ...parsed, id: entry.clientId }));
    const whole = (): Record<string, unknown> => (parsed ??= JSON.parse(text) as Record<string, unknown>);
    switch (type) {
      case 'events': {
        const revision = rest !== null ? eventsRevision.exec(rest)?.[1] : whole()['revision'];
        if (revision !== undefined && Number(revision) > entry.lastRevision) entry.lastRevision = Number(revision);
        this.toClient(relayed());
        return;
      }
      case 'created': {
        const start = Number(whole()['startRevision']);
        if (Number.isSafeInteger(start) && start - 1 > entry.lastRevision) entry.lastRevision = start - 1;
        this.confirm(entry);
        this.toClient(relayed());
        if (entry.cancelWanted) upstream.send(`{"id":${entry.upId},"type":"cancel"}`);
        return;
      }
      case 'leadership':
        if (!entry.confirmed && entry.kind === 'observe') {
          this.confirm(entry);
          if (entry.cancelWanted) upstream.send(`{"id":${entry.upId},"type":"observeCancel"}`);
        }
        this.toClient(relayed());
        return;
      case 'error': {
        const error = (whole()['error'] ?? {}) as Record<string, unknown>;
        if (error['code'] === 'wrong_cell') {
          this.options.metrics.streamWrongCell(upstream.cell);
          // Not yet created or answered: stale routing, sent once more. A watch that was open
          // (its namespace moved) is ended: the client resumes at the owner from resumeRevision.
          if (!entry.confirmed && this.resend(entry, error)) return;
        }
        const wasOpen = entry.confirmed;
        this.forgetEntry(entry);
        this.toClient(relayed());
        if (entry.cancelWanted && !wasOpen) {
          const key = JSON.stringify(entry.clientId);
          const what = entry.kind === 'watch' ? `no open watch with id ${key}` : `no observation with id ${key}`;
          this.answerError(entry.clientId, new InvalidArgumentError(what));
        }
        return;
      }
      case 'result':
      case 'canceled':
        this.forgetEntry(entry);
        this.toClient(relayed());
        return;
      default:
        this.toClient(relayed());
    }
  }

  /** Stale routing: correct the cache from the details and send the frame once more, at once. */
  private resend(entry: Entry, details: Record<string, unknown>): boolean {
    if (entry.retried) return false;
    const from = entry.upstream;
    this.options.routing.correct(details);
    let chosen;
    try {
      chosen = this.options.routing.choose(entry.spans);
    } catch {
      return false;
    }
    // The cache may already have held the owner (a correction by another frame): what counts is
    // that the frame now goes elsewhere.
    if (chosen.namespace.cell === from.cell) return false;
    from.entries.delete(entry.upId);
    entry.retried = true;
    this.options.metrics.streamRetry(chosen.namespace.cell);
    this.dispatch(entry, chosen.namespace.cell, chosen.endpoints);
    return true;
  }

  /**
   * The upstream closed or never opened: every frame pending on it is answered (`unavailable`, or
   * the cell's refusal of the connection), every watch on it ended with its last revision.
   */
  upstreamGone(upstream: Upstream, why: string, refusal: Record<string, unknown> | null): void {
    if (this.upstreams.get(upstream.cell) === upstream) this.upstreams.delete(upstream.cell);
    this.slowUpstreams.delete(upstream);
    if (!this.closed) this.endAll(upstream, why, refusal);
    this.resumeClientIfDrained();
  }

  private endAll(upstream: Upstream, why: string, refusal: Record<string, unknown> | null = null): void {
    for (const entry of [...upstream.entries.values()]) {
      const open = entry.confirmed;
      this.forgetEntry(entry);
      let error: Record<string, unknown>;
      if (refusal !== null && !open) error = refusal;
      else if (entry.kind === 'watch' && open) {
        error = { code: 'unavailable', message: `${why}: resume from lastRevision + 1`, lastRevision: entry.lastRevision };
      } else {
        error = { code: 'unavailable', message: entry.kind === 'request' ? `${why} (the outcome is unknown)` : why };
      }
      this.toClient(JSON.stringify({ id: entry.clientId, type: 'error', error }));
    }
    upstream.entries.clear();
  }

  private confirm(entry: Entry): void {
    if (entry.confirmed) return;
    entry.confirmed = true;
    this.pending--;
  }

  private forgetEntry(entry: Entry): void {
    entry.upstream?.entries.delete(entry.upId);
    if (!entry.confirmed) this.pending--;
    entry.confirmed = true; // counted once
    const key = JSON.stringify(entry.clientId);
    if (entry.kind === 'watch' && this.watches.get(key) === entry) this.watches.delete(key);
    if (entry.kind === 'observe' && this.observes.get(key) === entry) this.observes.delete(key);
  }

  // --- To the client, and backpressure both ways ---------------------------------------------------

  private toClient(text: string): void {
    if (this.closed) return;
    if (this.ws.bufferedAmount > this.limits.bufferedBytesMax) {
      this.ws.close(1008, 'slow consumer: the client stopped reading');
      setTimeout(() => this.ws.terminate(), closeGraceMs).unref();
      this.cleanup();
      return;
    }
    this.ws.send(text, this.written);
    if (!this.upstreamsPaused && this.ws.bufferedAmount > this.limits.bufferedBytesHigh) {
      this.upstreamsPaused = true;
      for (const upstream of this.upstreams.values()) upstream.pause();
    }
  }

  private onWritten(): void {
    if (!this.upstreamsPaused || this.closed || this.ws.bufferedAmount > this.limits.bufferedBytesHigh) return;
    this.upstreamsPaused = false;
    for (const upstream of this.upstreams.values()) upstream.resume();
  }

  /** An upstream has more than the high mark unsent: stop reading the client until it drains. */
  upstreamSlow(upstream: Upstream): void {
    if (this.slowUpstreams.size === 0) this.ws.pause();
    this.slowUpstreams.add(upstream);
  }

  upstreamDrained(upstream: Upstream): void {
    if (!this.slowUpstreams.delete(upstream)) return;
    this.resumeClientIfDrained();
  }

  private resumeClientIfDrained(): void {
    if (this.slowUpstreams.size === 0 && !this.closed && this.ws.isPaused) this.ws.resume();
  }

  private answerError(id: Id | null, error: unknown): void {
    if (!(error instanceof BatonError)) {
      this.log(`stream relay: ${(error as Error)?.stack ?? String(error)}`);
      this.toClient(JSON.stringify({ id, type: 'error', error: { code: 'internal', message: 'internal error' } }));
      return;
    }
    this.toClient(JSON.stringify({ id, type: 'error', error: { code: error.code, message: error.message, ...error.details } }));
  }

  private cleanup(): void {
    if (this.closed) return;
    this.closed = true;
    for (const upstream of this.upstreams.values()) upstream.close();
    this.upstreams.clear();
    this.watches.clear();
    this.observes.clear();
    this.forget();
  }
}
