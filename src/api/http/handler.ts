// The native HTTP/JSON API (../shared/spec/api.md): key-value, transactions, cluster status,
// maintenance, health and metrics. Each route validates its input, calls the cell, and answers
// with Baton-Revision and Baton-Cell headers; every error goes through sendError's one table.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { InvalidArgumentError } from '../../base/errors.js';
import { rangeJson, txnResultJson } from '../json.js';
import { readKeys } from '../kv-read.js';
import type { CellApi, PutRequest, TxnOpResult } from '../types.js';
import { bodyWasRefused, closeAfterAnswer, lingerIfUnread, readBody, readJson } from './body.js';
import type { ApiLimits } from './limits.js';
import {
  checkDeleteAll,
  deleteAllParameter,
  headerInteger,
  keyFromPath,
  parseTxn,
  rawTarget,
  Query,
  requestId,
  validValue,
  type Encoding,
} from './parse.js';
import { sendError, sendJson, type ResponseContext } from './respond.js';
import { hostProblem } from './server-hooks.js';
import { principalOfSocket } from '../principal.js';
import { withSource } from '../request-source.js';

/**
 * A group of routes kept in its own file (leases, watches, locks, ...). It answers the request
 * and returns true, or returns false for a path it does not own.
 */
export type RouteGroup = (request: RouteRequest) => Promise<boolean>;

export interface RouteRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly method: string;
  readonly query: Query;
  readonly context: ResponseContext;
  readonly limits: ApiLimits;
  /** Who asks (src/api/principal.ts): every call into the cell passes it on. */
  readonly principal: string;
}

export interface HttpApiOptions {
  readonly cell: CellApi;
  readonly limits: ApiLimits;
  /** Verifies `Authorization: Bearer TOKEN` (a user's token, src/api/auth-tokens.ts); absent: certificates only. */
  readonly tokens?: { verify(token: string): string };
  /** Consulted in order before the built-in routes. */
  readonly routeGroups?: readonly RouteGroup[];
  logError(error: unknown): void;
  /**
   * Requests that took at least this long (ms; 0: every request) are reported to `logSlow`, as
   * etcd's "request took too long" lines; null or no logSlow: none.
   */
  readonly slowRequestMs?: number | null;
  logSlow?(request: SlowRequest): void;
}

/** A request worth a log line: never its key, value or token (the route is the path's first two segments). */
export interface SlowRequest {
  readonly method: string;
  readonly route: string;
  readonly status: number;
  readonly ms: number;
  /** The client's Request-ID header, when it sent one. */
  readonly requestId?: string;
}

export function createHttpHandler(options: HttpApiOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { cell } = options;
  const context: ResponseContext = {
    cellId: cell.cellId,
    revision: () => cell.revision(),
    logError: options.logError,
  };
  const slowMs = options.slowRequestMs ?? null;
  const logSlow = options.logSlow;
  return (req, res) => {
    lingerIfUnread(req);
    if (slowMs !== null && logSlow !== undefined) watchDuration(req, res, slowMs, logSlow);
    withSource(req.socket, () => route(req, res, options, context)).catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (bodyWasRefused(req)) closeAfterAnswer(req, res);
      sendError(res, context, error);
    });
  };
}

function watchDuration(req: IncomingMessage, res: ServerResponse, slowMs: number, logSlow: (request: SlowRequest) => void): void {
  const started = performance.now();
  res.once('finish', () => {
    const ms = performance.now() - started;
    if (ms < slowMs) return;
    const id = req.headers['request-id'];
    logSlow({
      method: req.method ?? 'GET',
      route: routeOf(req.url ?? '/'),
      status: res.statusCode,
      ms: Math.round(ms * 10) / 10,
      ...(typeof id === 'string' && id !== '' ? { requestId: id.slice(0, 128) } : {}),
    });
  });
}

/** `/v1/kv/secret/name?x` -> `/v1/kv`: the route only, never a key or a lock's name. */
function routeOf(target: string): string {
  const path = target.split('?', 1)[0] as string;
  return path.split('/').slice(0, 3).join('/') || '/';
}

async function route(
  req: IncomingMessage,
  res: ServerResponse,
  options: HttpApiOptions,
  context: ResponseContext,
): Promise<void> {
  const method = req.method ?? 'GET';
  const { cell, limits } = options;
  const noHost = hostProblem(req);
  if (noHost !== null) throw noHost;
  const authorization = req.headers.authorization;
  // A user's token, when given, names the caller; else the connection's certificate (or anonymous).
  const principal = authorization !== undefined && authorization.startsWith('Bearer ') && options.tokens !== undefined
    ? options.tokens.verify(authorization.slice('Bearer '.length))
    : principalOfSocket(req.socket, cell.cellId);
  // Key-value requests (the hot path) skip the WHATWG URL parse and the route groups (no group
  // owns /v1/kv), each of which costs an await per request.
  const target = simpleTarget(req.url ?? '/');
  if (target !== null && (target.path === '/v1/kv' || target.path.startsWith('/v1/kv/'))) {
    const kvRoute = kvRoutes(req, res, context, cell, limits, method, target.path, Query.of(target.search), principal);
    if (kvRoute !== null) return kvRoute;
  }
  // Everything else is routed on the raw target (rawTarget refuses dot segments), never on a
  // path that URL parsing resolved: `/v1/kv/a/../b` must not reach key /b.
  const raw = rawTarget(req.url ?? '/');
  if (raw.path === '/v1/kv' || raw.path.startsWith('/v1/kv/')) {
    const kvRoute = kvRoutes(req, res, context, cell, limits, method, raw.path, Query.of(raw.search), principal);
    if (kvRoute !== null) return kvRoute;
    throw new InvalidArgumentError(`no such endpoint: ${method} ${raw.path}`);
  }
  // No dot segment is left to resolve; a backslash stays a character (WHATWG reads it as '/').
  const url = new URL(`${raw.path.replaceAll('\\', '%5C')}${raw.search}`, 'http://localhost');
  const path = url.pathname;
  const query = new Query(url.searchParams);
  for (const group of options.routeGroups ?? []) {
    if (await group({ req, res, url, method, query, context, limits, principal })) return;
  }
  if (path === '/v1/txn' && method === 'POST') {
    const encoding = query.oneOf<Encoding>('encoding', ['utf8', 'base64'], 'utf8');
    query.rejectUnknown();
    const body = await readJson(req, limits.requestBytesMax);
    const result = await cell.txn(parseTxn(body, encoding, limits), requestId(req.headers), principal);
    return sendJson(res, context, 200, txnJson(result.succeeded, result.revision, result.results, encoding), result.revision);
  } else if (path === '/v1/cluster/status' && method === 'GET') {
    query.rejectUnknown();
    cell.checkClusterInfo(principal);
    return sendJson(res, context, 200, cell.status());
  } else if (path === '/v1/maintenance/compact' && method === 'POST') {
    query.rejectUnknown();
    const body = await readJson(req, limits.requestBytesMax);
    const revision = (body as { revision?: unknown } | null)?.revision;
    if (typeof revision !== 'number' || !Number.isSafeInteger(revision) || revision < 1) {
      throw new InvalidArgumentError('revision must be an integer >= 1');
    }
    const result = await cell.compact(revision, principal);
    return sendJson(res, context, 200, result, result.revision);
  } else if (path === '/healthz' && method === 'GET') {
    return sendJson(res, context, cell.healthy() ? 200 : 503, { healthy: cell.healthy() });
  } else if (path === '/metrics' && method === 'GET') {
    const text = await cell.metricsText();
    res.writeHead(200, {
      'content-type': 'text/plain; version=0.0.4',
      'baton-revision': String(cell.revision()),
      'baton-cell': cell.cellId,
    });
    res.end(text);
    return;
  }
  throw new InvalidArgumentError(`no such endpoint: ${method} ${path}`);
}

function kvRoutes(
  req: IncomingMessage,
  res: ServerResponse,
  context: ResponseContext,
  cell: CellApi,
  limits: ApiLimits,
  method: string,
  path: string,
  query: Query,
  principal: string,
): Promise<void> | null {
  if (method === 'PUT') return putKey(req, res, context, cell, limits, keyFromPath(path, limits), query, principal);
  if (method === 'GET') return getKey(res, context, cell, limits, keyFromPath(path, limits), query, principal);
  if (method === 'DELETE') return deleteKey(req, res, context, cell, limits, keyFromPath(path, limits), query, principal);
  return null;
}

/**
 * The path and query of a request target that WHATWG URL parsing would leave exactly as it is
 * (printable ASCII that the path keeps unencoded, one leading slash, no dot segment, %2e or
 * fragment), else null: such targets take the full parse, so both give the same path and query.
 */
export function simpleTarget(target: string): { path: string; search: string } | null {
  if (!/^\/(?!\/)[!-~]*$/.test(target) || /["#<>\\`{}]|\/\.|%2e/i.test(target)) return null;
  const question = target.indexOf('?');
  if (question < 0) return { path: target, search: '' };
  // The search keeps its '?': URLSearchParams drops exactly one, as URL does ("??a=1" is "?a").
  return { path: target.slice(0, question), search: target.slice(question) };
}

/** A refused put's unread body up to this is drained (the connection kept); a larger one closes it. */
const earlyRefusalDrainBytesMax = 64 * 1024;

async function putKey(
  req: IncomingMessage,
  res: ServerResponse,
  context: ResponseContext,
  cell: CellApi,
  limits: ApiLimits,
  key: string,
  query: Query,
  principal: string,
): Promise<void> {
  query.rejectUnknown();
  const ifVersion = headerInteger(req.headers, 'if-version', 0);
  const ifRevision = headerInteger(req.headers, 'if-revision', 1);
  const lease = headerInteger(req.headers, 'lease-id', 1);
  const id = requestId(req.headers);
  // A tenant over its rate is refused before its body is read (#28); a large unread body closes
  // the connection after the answer rather than be read only to be dropped.
  try {
    cell.admitEarly?.(key, 'write', principal);
  } catch (error) {
    if (Number(req.headers['content-length'] ?? 0) > earlyRefusalDrainBytesMax) closeAfterAnswer(req, res);
    throw error;
  }
  const value = validValue(await readBody(req, limits.valueBytesMax), limits);
  const put: { -readonly [K in keyof PutRequest]: PutRequest[K] } = { key, value };
  if (ifVersion !== undefined) put.ifVersion = ifVersion;
  if (ifRevision !== undefined) put.ifRevision = ifRevision;
  if (lease !== undefined) put.lease = lease;
  const result = await cell.put(put, id, principal);
  sendJson(res, context, result.created ? 201 : 200, result, result.revision);
}

async function getKey(
  res: ServerResponse,
  context: ResponseContext,
  cell: CellApi,
  _limits: ApiLimits,
  key: string,
  query: Query,
  principal: string,
): Promise<void> {
  const consistency = query.oneOf('consistency', ['linearizable', 'serializable'] as const, 'linearizable');
  const encoding = query.oneOf<Encoding>('encoding', ['utf8', 'base64'], 'utf8');
  const revision = query.integer('revision', 0);
  const minRevision = query.integer('minRevision', 0);
  const prefix = query.flag('prefix');
  const limit = query.integer('limit', 0);
  const keysOnly = query.flag('keysOnly');
  const countOnly = query.flag('countOnly');
  const fenced = query.flag('fenced');
  const exclude = query.strings('exclude');
  const paged = query.flag('paged');
  const after = query.string('after');
  query.rejectUnknown();
  if (after !== undefined && !paged) throw new InvalidArgumentError('after pages a namespace read: it needs paged=true');
  const result = await readKeys(cell, 
    {
      key,
      prefix,
      keysOnly,
      countOnly,
      ...(limit !== undefined ? { limit } : {}),
      ...(revision !== undefined ? { revision } : {}),
    },
    {
      consistency, ...(minRevision !== undefined ? { minRevision } : {}), ...(fenced ? { fenced } : {}), ...(exclude.length > 0 ? { exclude } : {}),
      ...(paged ? { page: { after: after ?? null } } : {}),
    },
    principal,
  );
  sendJson(res, context, 200, { ...rangeJson(result, encoding), consistency }, result.revision);
}

async function deleteKey(
  req: IncomingMessage,
  res: ServerResponse,
  context: ResponseContext,
  cell: CellApi,
  _limits: ApiLimits,
  key: string,
  query: Query,
  principal: string,
): Promise<void> {
  const prefix = query.flag('prefix');
  const confirmed = query.flag(deleteAllParameter);
  query.rejectUnknown();
  checkDeleteAll({ key, prefix, confirmed }, `?${deleteAllParameter}=true`);
  const ifVersion = headerInteger(req.headers, 'if-version', 0);
  const ifRevision = headerInteger(req.headers, 'if-revision', 1);
  const result = await cell.deleteRange(
    {
      key,
      prefix,
      ...(ifVersion !== undefined ? { ifVersion } : {}),
      ...(ifRevision !== undefined ? { ifRevision } : {}),
    },
    requestId(req.headers),
    principal,
  );
  sendJson(res, context, 200, result, result.revision);
}

function txnJson(succeeded: boolean, revision: number, results: readonly TxnOpResult[], encoding: Encoding): unknown {
  return { succeeded, revision, results: results.map((result) => txnResultJson(result, encoding)) };
}
