// Tenants and their quotas (docs/api/tenants.md, issue #28), replicated state changed through the
// log (a tenantsSet with the table's version: two admins editing at once, one gets 412):
//   GET    /v1/tenants        every tenant with its limits and its use as applied here (linearizable),
//                              and its admission use and refusals on this node (onThisNode)
//   PUT    /v1/tenants/NAME   creates or replaces one tenant: {"prefixes": [...], "limits": {...}}
//   DELETE /v1/tenants/NAME   removes it (its keys stay; they count to no tenant)
// Administration (policy admin when security is on).
import { InvalidArgumentError } from '../../base/errors.js';
import { tenantProblem, unlimited, type TenantLimits, type TenantRecord, type TenantUsage } from '../../base/tenants.js';
import { readBody } from './body.js';
import type { RouteGroup } from './handler.js';
import { sendJson } from './respond.js';

export const tenantsPath = '/v1/tenants';

/** What the routes need from the cell (CellService). */
export interface TenantsApi {
  checkAdmin(principal: string): void;
  /** The table and each tenant's use, after a linearizable read barrier. */
  tenants(principal: string): Promise<{ version: number; tenants: ReadonlyArray<TenantRecord & { usage: TenantUsage }> }>;
  /** Replaces the table if it is still at `ifVersion`; the new version. */
  setTenants(tenants: readonly TenantRecord[], ifVersion: number, principal: string): Promise<{ version: number }>;
}

/**
 * `onThisNode(name)`: the tenant's use of the admission quotas on the answering node (rates,
 * concurrent requests, watches, buffered watch bytes, event rate) and the refusals it answered.
 */
export function createTenantRoutes(cell: TenantsApi, onThisNode: ((name: string) => Record<string, unknown>) | null = null): RouteGroup {
  return async (request) => {
    const path = request.url.pathname;
    if (path !== tenantsPath && !path.startsWith(`${tenantsPath}/`)) return false;
    request.query.rejectUnknown();
    cell.checkAdmin(request.principal); // refused before anything about the table is said
    if (path === tenantsPath) {
      if (request.method !== 'GET') throw new InvalidArgumentError(`no such endpoint: ${request.method} ${tenantsPath}`);
      const table = await cell.tenants(request.principal);
      const tenants = onThisNode === null ? table.tenants : table.tenants.map((t) => ({ ...t, onThisNode: onThisNode(t.name) }));
      sendJson(request.res, request.context, 200, { ...table, tenants });
      return true;
    }
    const name = decodeURIComponent(path.slice(tenantsPath.length + 1));
    const current = await cell.tenants(request.principal);
    const others = current.tenants.filter((t) => t.name !== name).map(({ usage: _usage, ...record }) => record);
    if (request.method === 'DELETE') {
      if (others.length === current.tenants.length) throw new InvalidArgumentError(`no tenant named ${name}`);
      sendJson(request.res, request.context, 200, await cell.setTenants(others, current.version, request.principal));
      return true;
    }
    if (request.method !== 'PUT') throw new InvalidArgumentError(`no such endpoint: ${request.method} ${tenantsPath}/NAME`);
    const record = tenantOfBody(name, await readBody(request.req, request.limits.requestBytesMax));
    sendJson(request.res, request.context, 200, await cell.setTenants([...others, record], current.version, request.principal));
    return true;
  };
}

const limitNames = Object.keys(unlimited) as Array<keyof TenantLimits>;

function tenantOfBody(name: string, body: Uint8Array): TenantRecord {
  let json: { prefixes?: unknown; limits?: Record<string, unknown> } | null;
  try {
    json = JSON.parse(Buffer.from(body).toString('utf8')) as typeof json;
  } catch {
    throw new InvalidArgumentError('a tenant is JSON: {"prefixes": [...], "limits": {...}}');
  }
  if (json === null || typeof json !== 'object') throw new InvalidArgumentError('a tenant is a JSON object');
  if (!Array.isArray(json.prefixes) || !json.prefixes.every((p) => typeof p === 'string')) {
    throw new InvalidArgumentError('prefixes must be a list of strings');
  }
  const limits: Record<string, number | null> = { ...unlimited };
  for (const [field, value] of Object.entries(json.limits ?? {})) {
    if (!limitNames.includes(field as keyof TenantLimits)) throw new InvalidArgumentError(`unknown limit ${field} (known: ${limitNames.join(', ')})`);
    if (value !== null && (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)) {
      throw new InvalidArgumentError(`${field} must be a whole number >= 0 or null`);
    }
    limits[field] = value;
  }
  const record: TenantRecord = { name, prefixes: json.prefixes as string[], limits: limits as unknown as TenantLimits };
  const problem = tenantProblem(record);
  if (problem !== null) throw new InvalidArgumentError(problem);
  return record;
}
