// The cell's namespace-ownership table (docs/design/cells.md), replicated state changed through
// the log; the control plane pushes it, nothing else needs to:
//   GET /v1/cluster/ownership   the table as applied here (linearizable), or {"table": null}, and
//                               the cell's dedup clock then ({"dedupClockMs"}: a move reads it
//                               before its fence, src/control/mover.ts)
//   PUT /v1/cluster/ownership   a table for this cell (its "cell" must be this cell's id); a table
//                               of an older epoch is 412 precondition_failed (details: current),
//                               the same table again changes nothing. Administration. With
//                               ?requestsOf=P&requestsSinceMs=T (a move's fence) the answer adds
//                               P's Request-ID records as of the table's apply (or null: too many).
//   POST /v1/cluster/import      a move's import record (src/mvcc/import-keys.ts): keys of a
//                               namespace this cell does not own yet, with their revisions, and
//                               a revision floor. The control plane's mover sends it. Administration.
//                               Request-ID records with `ageMs` are re-stamped into this cell's
//                               dedup clock before the record is proposed.
//   GET /v1/cluster/namespace-requests?prefix=P&sinceMs=T[&after=CURSOR]
//                               the dedup records of requests that named a key under P, stamped
//                               at T or later, a page at a time ({requests: [{id, record, stampMs,
//                               ageMs}] in base64, next: the cursor or null}): moved with the namespace.
import { InvalidArgumentError } from '../../base/errors.js';
import { namespaceProblem } from '../../base/namespaces.js';
import { readBody } from './body.js';
import type { RouteGroup } from './handler.js';
import { sendJson } from './respond.js';

export const ownershipPath = '/v1/cluster/ownership';
export const importPath = '/v1/cluster/import';
export const namespaceRequestsPath = '/v1/cluster/namespace-requests';

/** What the routes need from the cell (CellService). */
export interface OwnershipApi {
  readonly cellId: string;
  checkAdmin(principal: string): void;
  setOwnership(record: Uint8Array, principal: string, requestsOf?: { prefix: string; sinceMs: number }): Promise<unknown>;
  ownership(principal: string): Promise<unknown>;
  /** The dedup clock of the state applied here (src/mvcc/dedup.ts). */
  dedupClockMs(): number;
  importKeys(record: Uint8Array, principal: string): Promise<{ imported: number; revision: number }>;
  namespaceRequests(prefix: string, options: { sinceMs: number; after: Uint8Array | null }, principal: string): Promise<unknown>;
}

export function createOwnershipRoutes(cell: OwnershipApi): RouteGroup {
  return async (request) => {
    if (request.url.pathname === importPath && request.method === 'POST') {
      request.query.rejectUnknown();
      cell.checkAdmin(request.principal);
      const record = await readBody(request.req, request.limits.requestBytesMax);
      sendJson(request.res, request.context, 200, await cell.importKeys(new Uint8Array(record), request.principal));
      return true;
    }
    if (request.url.pathname === namespaceRequestsPath && request.method === 'GET') {
      const prefix = request.query.string('prefix') ?? '';
      const sinceMs = request.query.integer('sinceMs', 0) ?? 0;
      const after = request.query.string('after') ?? '';
      request.query.rejectUnknown();
      const problem = namespaceProblem(prefix);
      if (problem !== null) throw new InvalidArgumentError(`prefix: ${problem}`);
      const cursor = after === '' ? null : new Uint8Array(Buffer.from(after, 'base64'));
      sendJson(request.res, request.context, 200, await cell.namespaceRequests(prefix, { sinceMs, after: cursor }, request.principal));
      return true;
    }
    if (request.url.pathname !== ownershipPath) return false;
    // A move's fence may ask for the namespace's Request-ID records as of its apply (docs/design/cells.md).
    const requestsPrefix = request.method === 'PUT' ? request.query.string('requestsOf') : undefined;
    const requestsSinceMs = request.method === 'PUT' ? request.query.integer('requestsSinceMs', 0) ?? 0 : 0;
    request.query.rejectUnknown();
    const requestsProblem = requestsPrefix === undefined ? null : namespaceProblem(requestsPrefix);
    if (requestsProblem !== null) throw new InvalidArgumentError(`requestsOf: ${requestsProblem}`);
    if (request.method === 'GET') {
      const table = await cell.ownership(request.principal);
      sendJson(request.res, request.context, 200, { table, dedupClockMs: cell.dedupClockMs() });
      return true;
    }
    if (request.method !== 'PUT') throw new InvalidArgumentError(`no such endpoint: ${request.method} ${ownershipPath}`);
    cell.checkAdmin(request.principal);
    const record = await readBody(request.req, request.limits.requestBytesMax);
    let named: unknown;
    try {
      named = (JSON.parse(Buffer.from(record).toString('utf8')) as { cell?: unknown }).cell;
    } catch {
      throw new InvalidArgumentError('the ownership table must be JSON');
    }
    // The state machine checks the table's shape; that it is meant for this cell only the edge knows.
    if (named !== cell.cellId) throw new InvalidArgumentError(`the ownership table is for cell ${String(named)}, this is cell ${cell.cellId}`);
    const requestsOf = requestsPrefix === undefined ? undefined : { prefix: requestsPrefix, sinceMs: requestsSinceMs };
    sendJson(request.res, request.context, 200, await cell.setOwnership(new Uint8Array(record), request.principal, requestsOf));
    return true;
  };
}
