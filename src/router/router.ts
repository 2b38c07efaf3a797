// `baton router` (docs/design/cells.md): serves the native HTTP API on its own port and forwards
// each request to the cell that owns the request's namespace, to that cell's leader where it
// knows it. Stateless: the cell map is a cache of the control plane's. A cell that answers
// wrong_cell names the owner; the router corrects its cache from that answer and retries once, at
// once (no sleep). A request spanning namespaces of different cells is refused with cross_cell
// here, before any cell is asked. Every answer carries Baton-Cell and Baton-Routing-Epoch.
// The WebSocket stream (GET /v1/stream) is relayed per frame by stream-relay.ts. With TLS
// (router-tls.ts) the listener serves HTTPS and wss://, and https:// cells and control plane are
// reached presenting the router's client certificate.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { once } from 'node:events';
import type { Duplex } from 'node:stream';
import { BatonError, CrossCellError, InvalidArgumentError, UnavailableError, WrongCellError, httpStatusOf } from '../base/errors.js';
import { namespacesOfSpan, type KeySpan } from '../base/namespaces.js';
import type { MapNamespace } from '../control/cell-map.js';
import { consoleAnswer, isConsolePath, loadConsoleFiles } from '../console/console-files.js';
import { getJson, MapCache } from './map-cache.js';
import { RouterMetrics } from './router-metrics.js';
import { UpstreamClient, type RouterListenerTls, type RouterTls } from './router-tls.js';
import { routeTarget } from './route-keys.js';
import { StreamRelay } from './stream-relay.js';

const requestBytesMax = 2 * 1024 * 1024;
const leaderRefreshMs = 2_000;

export interface RouterOptions {
  readonly control: readonly string[];
  readonly host: string;
  readonly port: number;
  readonly log?: (message: string) => void;
  /** TLS on the listener and towards the cells (router-tls.ts); absent: plain HTTP both ways. */
  readonly tls?: RouterTls;
}

interface Chosen {
  readonly namespace: MapNamespace;
  readonly endpoints: readonly string[];
}

/** A cell chosen for a request, for the router's gRPC relay (src/router-grpc). */
export interface RoutedCell {
  readonly cell: string;
  /** The namespace's routing epoch (the map's for a per-cell request): Baton-Routing-Epoch. */
  readonly epoch: number;
  /** The cell's etcd gRPC URLs, its leader's first where known; empty: none known. */
  readonly grpcEndpoints: readonly string[];
}

export class Router {
  readonly cache: MapCache;
  readonly metrics: RouterMetrics;
  /** GET /v1/stream: each client's frames relayed to the owning cells (stream-relay.ts). */
  readonly streams: StreamRelay;
  /** Connections to the cells and the control plane (https:// ones with the router's certificate). */
  private readonly upstream: UpstreamClient;
  /** Each cell's leader's client URL, as its status last said. */
  private readonly leaders = new Map<string, string>();
  /** Members' etcd gRPC URLs by client URL, as their cells' statuses last said (the gRPC relay's). */
  private readonly grpcUrls = new Map<string, string>();
  private server: Server | null = null;
  private leaderTimer: NodeJS.Timeout | null = null;
  /** Listeners composed onto this router from outside src/router (the etcd gRPC relay): stopped with it. */
  private readonly attached: { stop(): Promise<void> }[] = [];
  /** The web console (docs/console.md): in router mode it shows the cells and namespaces. */
  private readonly consoleFiles = loadConsoleFiles();

  constructor(private readonly options: RouterOptions) {
    this.upstream = new UpstreamClient(options.tls?.upstream);
    this.cache = new MapCache(options.control, undefined, options.log, this.upstream);
    this.metrics = new RouterMetrics(() => this.cache.ageMs(), () => this.streams.counts());
    this.streams = new StreamRelay({
      routing: {
        choose: (spans) => this.choose(spans),
        order: (cell, endpoints) => this.order(cell, endpoints),
        unreachable: (cell, endpoint) => {
          if (this.leaders.get(cell) === endpoint) this.leaders.delete(cell);
        },
        correct: (details) => this.cache.correct(details),
        epoch: () => this.cache.cellMap.epoch,
      },
      metrics: this.metrics,
      log: options.log,
      upstreamTls: () => this.upstream.tlsOptions(),
    });
  }

  async start(): Promise<{ url: string }> {
    this.cache.start();
    this.leaderTimer = setInterval(() => void this.refreshLeaders(), leaderRefreshMs);
    this.leaderTimer.unref();
    const handle = (req: IncomingMessage, res: ServerResponse): void => {
      this.serve(req, res).catch((error: unknown) => this.fail(res, error));
    };
    const tls = this.options.tls?.listener;
    const server = tls === undefined ? createServer(handle) : secureServer(tls, handle);
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.streams.upgrade(req, socket, head));
    server.keepAliveTimeout = 65_000;
    server.listen(this.options.port, this.options.host);
    await once(server, 'listening');
    this.server = server;
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : this.options.port;
    return { url: `${tls === undefined ? 'http' : 'https'}://${this.options.host}:${port}` };
  }

  /** A listener that serves through this router (src/router-grpc): router.stop() stops it first. */
  attach(part: { stop(): Promise<void> }): void {
    this.attached.push(part);
  }

  async stop(): Promise<void> {
    await Promise.all(this.attached.splice(0).map((part) => part.stop()));
    this.streams.stop();
    this.cache.stop();
    if (this.leaderTimer !== null) clearInterval(this.leaderTimer);
    this.upstream.destroy();
    const server = this.server;
    if (server === null) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = req.url ?? '/';
    const question = raw.indexOf('?');
    const path = question < 0 ? raw : raw.slice(0, question);
    const query = new URLSearchParams(question < 0 ? '' : raw.slice(question + 1));
    if (isConsolePath(path)) {
      if (query.size > 0) throw new InvalidArgumentError(`unknown query parameter on ${path}`);
      const answer = consoleAnswer(this.consoleFiles, req.method ?? 'GET', path, req.headers['if-none-match']);
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body ?? undefined);
      return;
    }
    if (path === '/v1/cluster/status' && req.method === 'GET') return this.answer(res, 200, this.status());
    if (path === '/metrics' && req.method === 'GET') {
      const text = await this.metrics.registry.render();
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(text);
      return;
    }
    const body = await readBody(req);
    if (path === '/v1/control' || path.startsWith('/v1/control/')) return this.toControl(req, res, body);
    const target = routeTarget(path, query, body, req.headers);
    const chosen = target.kind === 'keys' ? this.choose(target.spans) : this.namedCell(req.headers['baton-cell']);
    await this.forward(req, res, body, chosen, target.kind === 'keys' ? target.spans : null, true);
  }

  /** The one cell owning every namespace the spans touch; cross_cell if several. */
  private choose(spans: readonly KeySpan[]): Chosen {
    const namespaces = this.cache.namespaces();
    const prefixes = [...namespaces.keys()];
    if (prefixes.length === 0) throw new UnavailableError('the router has no cell map yet: is the control plane reachable?');
    const touched = new Map<string, MapNamespace>();
    for (const span of spans) {
      for (const prefix of namespacesOfSpan(prefixes, span)) touched.set(prefix, namespaces.get(prefix) as MapNamespace);
    }
    const cells = new Set([...touched.values()].map((n) => n.cell));
    if (cells.size > 1) throw new CrossCellError([...touched.values()].map((n) => ({ namespace: n.prefix, cell: n.cell })));
    // Every touched namespace is on the one cell; the first names it (and its epoch the answer's).
    const owner = [...touched.values()][0] ?? (namespaces.get('/') as MapNamespace);
    return { namespace: owner, endpoints: this.cache.endpointsOf(owner.cell) };
  }

  private namedCell(header: string | string[] | undefined): Chosen {
    const cell = typeof header === 'string' ? header : this.cache.namespaces().get('/')?.cell;
    if (cell === undefined) throw new UnavailableError('the router has no cell map yet: is the control plane reachable?');
    const endpoints = this.cache.endpointsOf(cell);
    if (endpoints.length === 0) throw new InvalidArgumentError(`no cell ${cell} in the cell map`, { cell });
    return { namespace: { prefix: '', cell, epoch: this.cache.cellMap.epoch, state: 'active' }, endpoints };
  }

  private async forward(
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
    chosen: Chosen,
    spans: readonly KeySpan[] | null,
    mayRetry: boolean,
  ): Promise<void> {
    const answer = await this.send(req, body, chosen);
    this.metrics.forwarded(chosen.namespace.cell);
    if (answer.statusCode === 421 && mayRetry && spans !== null) {
      const text = await readAll(answer);
      this.metrics.wrongCell(chosen.namespace.cell);
      const details = parseError(text);
      // Stale routing: take the owner the cell named and try once more, at once.
      if (details !== null && this.cache.correct(details)) return this.forward(req, res, body, this.choose(spans), spans, false);
      return this.relay(res, answer, chosen, text);
    }
    this.relay(res, answer, chosen, null);
  }

  /** To the cell's leader first (no second hop), then its other members; connection errors only. */
  private async send(req: IncomingMessage, body: Buffer, chosen: Chosen): Promise<IncomingMessage> {
    const order = this.order(chosen.namespace.cell, chosen.endpoints);
    if (order.length === 0) throw new UnavailableError(`no endpoints known for cell ${chosen.namespace.cell}`);
    let last: unknown = null;
    for (const endpoint of order) {
      try {
        return await sendOnce(this.upstream, endpoint, req, body);
      } catch (error) {
        // Only a request that never reached the cell is tried elsewhere.
        if (!isConnectError(error)) throw new UnavailableError(`cell ${chosen.namespace.cell} at ${endpoint}: ${(error as Error).message}`);
        last = error;
        if (this.leaders.get(chosen.namespace.cell) === endpoint) this.leaders.delete(chosen.namespace.cell);
      }
    }
    throw new UnavailableError(`no member of cell ${chosen.namespace.cell} answered: ${(last as Error)?.message ?? ''}`, { cell: chosen.namespace.cell });
  }

  /** A cell's endpoints in the order to try: its leader first where known (no second hop). */
  private order(cell: string, endpoints: readonly string[]): string[] {
    const leader = this.leaders.get(cell);
    return leader !== undefined && endpoints.includes(leader) ? [leader, ...endpoints.filter((e) => e !== leader)] : [...endpoints];
  }

  /** The control plane's API through the router (baton ns/cells with --endpoints at a router). */
  private async toControl(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const chosen = { namespace: { prefix: '', cell: 'control', epoch: this.cache.cellMap.epoch, state: 'active' as const }, endpoints: this.options.control };
    this.relay(res, await this.send(req, body, chosen), chosen, null);
  }

  private relay(res: ServerResponse, answer: IncomingMessage, chosen: Chosen, text: Buffer | null): void {
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && name !== 'connection' && name !== 'keep-alive' && name !== 'transfer-encoding') headers[name] = value;
    }
    headers['baton-cell'] = chosen.namespace.cell;
    headers['baton-routing-epoch'] = String(chosen.namespace.epoch);
    res.writeHead(answer.statusCode ?? 502, headers);
    if (text !== null) {
      res.end(text);
      return;
    }
    answer.pipe(res);
    res.on('close', () => answer.destroy());
    // An upstream that dies mid-answer (a member killed under a watch) cuts the client's connection
    // too: pipe() leaves it open and silent for ever, and the client would never resume elsewhere.
    answer.on('close', () => {
      if (!answer.complete) res.destroy();
    });
  }

  private status(): unknown {
    const map = this.cache.cellMap;
    return {
      router: true,
      epoch: map.epoch,
      cacheAgeMs: Math.round(this.cache.ageMs()),
      cells: map.cells.map((cell) => ({ ...cell, leader: this.leaders.get(cell.id) ?? null })),
      namespaces: [...this.cache.namespaces().values()],
    };
  }

  private async refreshLeaders(): Promise<void> {
    for (const cell of this.cache.cellMap.cells) await this.refreshCell(cell);
  }

  /** One cell's leader and members' gRPC URLs, from the first member that answers its status. */
  private async refreshCell(cell: { readonly id: string; readonly endpoints: readonly string[] }): Promise<void> {
    for (const endpoint of cell.endpoints) {
      try {
        const status = (await getJson(this.upstream, `${endpoint}/v1/cluster/status`, 1_000)).body as { leader?: number; members?: { id: number; clientUrl: string; grpcUrl?: unknown }[] };
        const leader = status.members?.find((m) => m.id === status.leader)?.clientUrl;
        if (leader !== undefined && cell.endpoints.includes(leader)) this.leaders.set(cell.id, leader);
        for (const member of status.members ?? []) {
          if (typeof member.grpcUrl === 'string' && cell.endpoints.includes(member.clientUrl)) this.grpcUrls.set(member.clientUrl, member.grpcUrl);
        }
        return;
      } catch {
        // the next member
      }
    }
  }

  // --- for the gRPC relay (src/router-grpc): the same routing as HTTP, answers in gRPC ---

  /** The one cell owning every namespace the spans touch (cross_cell if several), with its gRPC URLs. */
  async routeGrpc(spans: readonly KeySpan[]): Promise<RoutedCell> {
    const chosen = this.choose(spans);
    return { cell: chosen.namespace.cell, epoch: chosen.namespace.epoch, grpcEndpoints: await this.grpcEndpointsOf(chosen) };
  }

  /** A per-cell request (maintenance, auth, compact): the cell named, else the root namespace's. */
  async cellGrpc(cell: string | undefined): Promise<RoutedCell> {
    const chosen = this.namedCell(cell);
    return { cell: chosen.namespace.cell, epoch: chosen.namespace.epoch, grpcEndpoints: await this.grpcEndpointsOf(chosen) };
  }

  /** A wrong_cell answer's details into the cache; true if it changed the owner (then retry once). */
  correct(details: Record<string, unknown>): boolean {
    return this.cache.correct(details);
  }

  /** The material towards https:// cells (the gRPC relay's TLS credentials). */
  upstreamTls(): ReturnType<UpstreamClient['tlsOptions']> {
    return this.upstream.tlsOptions();
  }

  /** The gRPC URLs of the chosen cell's members, leader first; a cell not yet asked is asked now. */
  private async grpcEndpointsOf(chosen: Chosen): Promise<string[]> {
    const known = (): string[] => this.order(chosen.namespace.cell, chosen.endpoints).flatMap((e) => this.grpcUrls.get(e) ?? []);
    if (known().length === 0) await this.refreshCell({ id: chosen.namespace.cell, endpoints: chosen.endpoints });
    return known();
  }

  private answer(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private fail(res: ServerResponse, error: unknown): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const known = error instanceof BatonError ? error : new UnavailableError(`router: ${(error as Error)?.message ?? String(error)}`);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (known instanceof CrossCellError || known instanceof WrongCellError) headers['baton-routing-epoch'] = String(this.cache.cellMap.epoch);
    res.writeHead(httpStatusOf(known.code) ?? 500, headers);
    res.end(JSON.stringify({ error: { code: known.code, message: known.message, ...known.details } }));
  }
}

/**
 * The HTTPS listener, as a node's (node/apis.ts): with a trusted CA a certificate is asked for (and
 * required with --client-cert-auth), a revoked one is cut before a byte is read, and a reload
 * serves the new certificate to new connections. Upgrades (the wss:// stream) arrive as on HTTP.
 */
function secureServer(tls: RouterListenerTls, handle: (req: IncomingMessage, res: ServerResponse) => void): Server {
  const requestCert = tls.clientCertAuth || tls.material().ca !== undefined;
  const server = createHttpsServer({ ...tls.material(), requestCert, rejectUnauthorized: tls.clientCertAuth }, handle);
  server.prependListener('secureConnection', (socket: TLSSocket) => tls.admit(socket));
  tls.onReload(() => server.setSecureContext({ ...tls.material() }));
  return server as unknown as Server;
}

/** Endpoint URL -> host, port and scheme, parsed once (not per forwarded request). */
const endpointParts = new Map<string, { hostname: string; port: number; secure: boolean }>();

function partsOf(endpoint: string): { hostname: string; port: number; secure: boolean } {
  let parts = endpointParts.get(endpoint);
  if (parts === undefined) {
    const url = new URL(endpoint);
    const secure = url.protocol === 'https:';
    parts = { hostname: url.hostname, port: Number(url.port || (secure ? 443 : 80)), secure };
    if (endpointParts.size > 4_096) endpointParts.clear();
    endpointParts.set(endpoint, parts);
  }
  return parts;
}

function sendOnce(upstream: UpstreamClient, endpoint: string, req: IncomingMessage, body: Buffer): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && name !== 'host' && name !== 'connection' && name !== 'content-length' && name !== 'transfer-encoding') headers[name] = value;
    }
    headers['content-length'] = String(body.length);
    const { hostname, port, secure } = partsOf(endpoint);
    const out = upstream.pooled(secure, { hostname, port, path: req.url ?? '/', method: req.method ?? 'GET', headers }, resolve);
    out.on('error', reject);
    out.end(body);
  });
}

function isConnectError(error: unknown): boolean {
  const code = (error as { code?: string })?.code;
  return code === 'ECONNREFUSED' || code === 'EHOSTUNREACH' || code === 'ENOTFOUND' || code === 'EADDRNOTAVAIL';
}

const noBody = Buffer.alloc(0);

async function readBody(req: IncomingMessage): Promise<Buffer> {
  // Most requests (gets, watches, status) have none: no stream to wait on.
  if (req.headers['transfer-encoding'] === undefined && (req.headers['content-length'] === undefined || req.headers['content-length'] === '0')) return noBody;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > requestBytesMax) throw new InvalidArgumentError(`the request body is over the router's limit of ${requestBytesMax} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

async function readAll(res: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function parseError(text: Buffer): Record<string, unknown> | null {
  try {
    const body = JSON.parse(text.toString('utf8')) as { error?: Record<string, unknown> };
    return body.error ?? null;
  } catch {
    return null;
  }
}
