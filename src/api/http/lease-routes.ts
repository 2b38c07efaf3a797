// Leases over HTTP (api.md, Leases): grant, keepalive of many IDs in one call, time-to-live with
// the attached keys, revoke, and a bounded list (`GET /v1/leases?limit=N&after=ID`). TTLs are
// seconds on the wire (milliseconds precision); a TTL outside the cell's bounds is 400, never
// silently adjusted. The lease logic lives behind LeaseApi.
import { InvalidArgumentError } from '../../base/errors.js';
import { leaseGrantBatchMax, requestIdBytesMax } from '../../base/limits.js';
import { readJson } from './body.js';
import type { RouteGroup, RouteRequest } from './handler.js';
import { parseInteger, requestId } from './parse.js';
import { sendJson } from './respond.js';
import { forwardedHeader, leaseListLimitDefault, leaseListLimitMax, type LeaseApi } from '../../lease/api.js';


export function parseTtlMs(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new InvalidArgumentError('ttl must be a positive number of seconds', { ttl: value });
  }
  const ttlMs = Math.round(value * 1000);
  if (Math.abs(ttlMs - value * 1000) > 1e-6) throw new InvalidArgumentError('ttl has at most millisecond precision');
  return ttlMs;
}

export function parseLeaseIds(value: unknown, max: number): number[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new InvalidArgumentError('ids must be a non-empty array of lease IDs');
  }
  if (value.length > max) throw new InvalidArgumentError(`at most ${max} lease IDs per keepalive`, { limit: max });
  for (const id of value) {
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) {
      throw new InvalidArgumentError('a lease ID is an integer >= 1', { id });
    }
  }
  return value as number[];
}

function bodyObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidArgumentError('the body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

function allowOnly(body: Record<string, unknown>, names: readonly string[]): void {
  for (const name of Object.keys(body)) {
    if (!names.includes(name)) throw new InvalidArgumentError(`unknown field "${name}"`);
  }
}

export function createLeaseRoutes(leases: LeaseApi): RouteGroup {
  return async (request) => {
    const path = request.url.pathname;
    if (path !== '/v1/leases' && !path.startsWith('/v1/leases/')) return false;
    await serveLeases(leases, request, path);
    return true;
  };
}

async function serveLeases(leases: LeaseApi, request: RouteRequest, path: string): Promise<void> {
  const { req, res, method, context, query, limits } = request;
  if (path === '/v1/leases' && method === 'GET') {
    const after = query.integer('after', 0) ?? 0;
    const limit = query.integer('limit', 1) ?? leaseListLimitDefault;
    query.rejectUnknown();
    if (limit > leaseListLimitMax) {
      throw new InvalidArgumentError(`at most ${leaseListLimitMax} leases per page`, { limit: leaseListLimitMax });
    }
    const list = await leases.list({ after, limit }, req.headers[forwardedHeader] !== undefined, request.principal);
    return sendJson(res, context, 200, list, list.revision);
  }
  query.rejectUnknown();
  if (path === '/v1/leases' && method === 'POST') {
    const body = bodyObject(await readJson(req, limits.requestBytesMax));
    allowOnly(body, ['ttl', 'id']);
    const id = body['id'];
    if (id !== undefined && (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1)) {
      throw new InvalidArgumentError('id must be an integer >= 1', { id });
    }
    const ttlMs = parseTtlMs(body['ttl']);
    const granted = await leases.grant({ ttlMs, ...(id !== undefined ? { id: id as number } : {}) }, requestId(req.headers), request.principal);
    return sendJson(res, context, 200, { id: granted.id, ttl: granted.ttl }, granted.revision);
  }
  if (path === '/v1/leases/batch' && method === 'POST') {
    const body = bodyObject(await readJson(req, limits.requestBytesMax));
    allowOnly(body, ['ttl', 'count']);
    const count = body['count'];
    if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 1 || count > leaseGrantBatchMax) {
      throw new InvalidArgumentError(`count must be an integer from 1 to ${leaseGrantBatchMax}`, { count: count ?? null, limit: leaseGrantBatchMax });
    }
    const ttlMs = parseTtlMs(body['ttl']);
    const id = requestId(req.headers);
    // Each grant's Request-ID is `{id}.{i}` (up to 4 more bytes): it must still fit the limit.
    if (id !== undefined && Buffer.byteLength(id) + 4 > requestIdBytesMax) {
      throw new InvalidArgumentError(`a batch's Request-ID is at most ${requestIdBytesMax - 4} bytes`, { limit: requestIdBytesMax - 4 });
    }
    const answer = await leases.grantMany({ ttlMs, count }, id, request.principal);
    return sendJson(res, context, 200, answer, answer.revision);
  }
  if (path === '/v1/leases/keepalive' && method === 'POST') {
    const body = bodyObject(await readJson(req, limits.requestBytesMax));
    allowOnly(body, ['ids']);
    const ids = parseLeaseIds(body['ids'], leases.keepaliveIdsMax);
    const answer = await leases.keepalive(ids, req.headers[forwardedHeader] !== undefined, request.principal);
    return sendJson(res, context, 200, answer, answer.revision);
  }
  const match = /^\/v1\/leases\/([^/]+)$/.exec(path);
  if (match !== null) {
    const id = parseInteger(match[1] as string, 'lease ID', 1);
    if (method === 'GET') {
      const info = await leases.timeToLive(id, req.headers[forwardedHeader] !== undefined, request.principal, true);
      return sendJson(res, context, 200, info, info.revision);
    }
    if (method === 'DELETE') {
      const revoked = await leases.revoke(id, requestId(req.headers), request.principal);
      return sendJson(res, context, 200, revoked, revoked.revision);
    }
  }
  throw new InvalidArgumentError(`no such endpoint: ${method} ${path}`);
}
