// A real HTTP server (handler, watch routes and the /v1/stream upgrade) over an MVCC store on a
// MemoryEngine, with a cell that applies each write at once through the store's own apply path
// (Request-ID dedup included), plus raw-socket helpers: the bad-input tests send bytes that
// fetch and http.request would never send (dot segments kept, lying lengths, broken handshakes).
// The watch transport tests start the same server (startStoreServer) from test/unit/watch/in-process.ts.
import type { StoredPolicy } from '../../../src/mvcc/index.js';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect } from 'node:net';
import { createHttpHandler, defaultApiLimits, type ApiLimits } from '../../../src/api/http/index.js';
import { createWatchRoutes } from '../../../src/api/http/watch-routes.js';
import { StreamServer, WatchService, type WatchServiceOptions } from '../../../src/api/stream/index.js';
import type * as api from '../../../src/api/types.js';
import { AccessGuard } from '../../../src/auth/index.js';
import { EntryType } from '../../../src/raft/types.js';
import { encodeCommand, MemoryEngine, MvccStore, defaultMvccLimits, type Command, type CommandResult } from '../../../src/mvcc/index.js';

export class StoreCell implements api.CellApi {
  readonly cellId = 'cell-test';
  private index = 0;
  /** The production guard over this store: the policy is whatever the test stored. */
  readonly guard: AccessGuard;
  constructor(
    readonly store: MvccStore,
    private readonly onApplied: () => void,
  ) {
    this.guard = new AccessGuard(store);
  }
  async readBarrier(): Promise<void> {}
  localPolicyRecord(): StoredPolicy {
    return this.store.policyRecord();
  }
  checkAdmin(principal: string): void {
    this.guard.checkAdmin(principal);
  }
  checkClusterInfo(principal: string): void {
    this.guard.checkClusterInfo(principal);
  }
  revision(): number {
    return this.store.revision;
  }
  apply(op: Command, requestId?: string): CommandResult {
    this.index++;
    const envelope = { proposedAtMs: 1_000_000 + this.index, source: 1, op, ...(requestId !== undefined ? { requestId } : {}) };
    const data = encodeCommand(envelope, defaultMvccLimits);
    const [outcome] = this.store.applyBatch([{ index: this.index, term: 1, type: EntryType.normal, data }]);
    this.onApplied();
    if (outcome?.type === 'failed') throw outcome.error;
    if (outcome?.type !== 'applied') throw new Error('not applied');
    return outcome.result;
  }
  async put(request: api.PutRequest, requestId: string | undefined): Promise<api.PutResult> {
    const r = this.apply({ type: 'put', ...request }, requestId);
    if (r.type !== 'put') throw new Error(`put answered with ${r.type}`);
    return { created: r.created, version: r.version, revision: r.revision, fencingToken: r.fencingToken };
  }
  async range(request: api.RangeRequest): Promise<api.RangeResult> {
    const r = this.store.range({ type: 'get', ...request });
    return { revision: r.revision, count: r.count, more: r.more, kvs: r.kvs };
  }
  async deleteRange(request: api.DeleteRequest, requestId: string | undefined): Promise<api.DeleteResult> {
    const r = this.apply({ type: 'delete', ...request }, requestId);
    if (r.type !== 'delete') throw new Error(`delete answered with ${r.type}`);
    return { deleted: r.deleted, revision: r.revision };
  }
  async txn(request: api.TxnRequest, requestId: string | undefined): Promise<api.TxnResult> {
    const toOp = (op: api.TxnOp): any => {
      if ('put' in op) return { type: 'put', ...op.put };
      if ('get' in op) return { type: 'get', ...op.get };
      return { type: 'delete', ...op.delete };
    };
    const r = this.apply(
      { type: 'txn', compare: request.compare, success: request.success.map(toOp), failure: request.failure.map(toOp) },
      requestId,
    );
    if (r.type !== 'txn') throw new Error(`txn answered with ${r.type}`);
    return { succeeded: r.succeeded, revision: r.revision, results: r.results as any };
  }
  async compact(revision: number): Promise<{ revision: number; compactRevision: number }> {
    const r = this.apply({ type: 'compact', revision }, undefined);
    if (r.type !== 'compact') throw new Error('compact');
    return { revision: r.revision, compactRevision: r.compactRevision };
  }
  async policyRecord(): Promise<StoredPolicy> {
    return this.store.policyRecord();
  }
  async setPolicyRecord(record: Uint8Array, ifVersion: number): Promise<{ version: number }> {
    const r = this.apply({ type: 'policySet', record, ifVersion }, undefined);
    if (r.type !== 'policySet') throw new Error('policySet');
    return { version: r.version };
  }
  status(): api.ClusterStatus {
    throw new Error('not in the store cell');
  }
  healthy(): boolean {
    return true;
  }
  ready(): { ready: boolean; reason: string } {
    return { ready: true, reason: 'ok' };
  }
  metricsText(): Promise<string> {
    return Promise.resolve('');
  }
}

export interface StoreServer {
  readonly port: number;
  readonly cell: StoreCell;
  readonly service: WatchService;
  stop(): Promise<void>;
}

/** Listens on a free loopback port; every error the handler or stream server logs goes to `logError`. */
export async function startStoreServer(options: {
  logError: (error: unknown) => void;
  limits?: ApiLimits;
  watch?: Partial<WatchServiceOptions>;
}): Promise<StoreServer> {
  const { logError, limits = defaultApiLimits } = options;
  const store = new MvccStore(new MemoryEngine());
  const service = new WatchService(store, new AccessGuard(store), options.watch);
  const cell = new StoreCell(store, () => service.onApplied());
  const handler = createHttpHandler({ cell, limits, routeGroups: [createWatchRoutes(service)], logError });
  const server: Server = createServer(handler);
  const stream = new StreamServer({ cell, apiLimits: limits, service, logError });
  stream.attach(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    cell,
    service,
    async stop() {
      await service.stop();
      stream.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

export interface ApiServer {
  readonly port: number;
  readonly url: string;
  readonly cell: StoreCell;
  readonly errors: unknown[];
  stop(): Promise<void>;
}

/** The store server with what it logged kept in `errors` (a bad-input test expects none). */
export async function startApiServer(limits: ApiLimits = defaultApiLimits): Promise<ApiServer> {
  const errors: unknown[] = [];
  const { port, cell, stop } = await startStoreServer({ limits, logError: (error) => errors.push(error) });
  return { port, url: `http://127.0.0.1:${port}`, cell, errors, stop };
}

export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  readonly json: any;
}

/** One request with the path sent exactly as given (http.request never resolves dot segments). */
export function send(
  port: number,
  options: { method: string; path: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method: options.method, path: options.path, headers: options.headers ?? {}, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: any = null;
          try {
            json = JSON.parse(text);
          } catch {
            json = null;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Writes raw bytes, then collects everything the server sends until it closes (or `timeoutMs`). */
export function rawExchange(
  port: number,
  write: (socket: import('node:net').Socket) => void | Promise<void>,
  timeoutMs = 5_000,
): Promise<{ text: string; error: string | null; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let error: string | null = null;
    const timer = setTimeout(() => {
      socket.destroy();
      finish(false);
    }, timeoutMs);
    let finished = false;
    const finish = (closed: boolean): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('latin1'), error, closed });
    };
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    socket.on('close', () => finish(true));
    socket.on('connect', () => {
      Promise.resolve(write(socket)).catch((e: NodeJS.ErrnoException) => {
        error = e.code ?? e.message;
      });
    });
  });
}

/** Status line, headers (lower-case) and body of one raw HTTP answer. */
export function parseRawAnswer(text: string): { status: number; headers: Record<string, string>; body: string } {
  const split = text.indexOf('\r\n\r\n');
  const head = split < 0 ? text : text.slice(0, split);
  const body = split < 0 ? '' : text.slice(split + 4);
  const [statusLine, ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine?.split(' ')[1] ?? 0), headers, body };
}
