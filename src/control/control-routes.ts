// The control plane's API (docs/api/control.md), served by the members of a cell started with
// --control-plane:
//   GET    /v1/control/cells                 {epoch, cells}
//   POST   /v1/control/cells                 {id, endpoints}: add a cell (or replace its endpoints)
//   GET    /v1/control/namespaces            the whole cell map {epoch, cells, namespaces}
//   POST   /v1/control/namespaces            {prefix, cell}: create a namespace on a cell (on
//                                            another cell than its parent's: a move, namespace-create.ts)
//   GET    /v1/control/namespaces/PREFIX     one namespace with its cell's endpoints
//   DELETE /v1/control/namespaces/PREFIX     delete one (only if its parent is on the same cell)
//   GET    /v1/control/moves                 {moves}: open and recently finished move records
//   POST   /v1/control/moves                 {prefix, to}: start moving a namespace (mover.ts); 412
//                                            if a member of either cell runs an older build (member-builds.ts)
//   POST   /v1/control/moves/abort           {prefix}: abort its open move (until the flip)
// Changes are administration; every change answers with the map's new epoch and which cells
// hold it already (`pending`: still being pushed).
import { InvalidArgumentError } from '../base/errors.js';
import { readJson } from '../api/http/body.js';
import { bodyObject, pathSegment, stringField } from '../api/http/json-fields.js';
import type { RouteGroup, RouteRequest } from '../api/http/handler.js';
import { sendJson } from '../api/http/respond.js';
import { namespaceInfo, nestedIn, withCell, withoutNamespace, type CellMap, type MapCell } from './cell-map.js';
import { checkMoveBuilds, protocolNeeded } from './member-builds.js';
import type { ControlService } from './control-service.js';
import { latestMove, withMoveAborted, withMoveStarted } from './moves.js';
import { createNamespace, createdInfo } from './namespace-create.js';

const cellsPath = '/v1/control/cells';
const namespacesPath = '/v1/control/namespaces';
const movesPath = '/v1/control/moves';
const abortPath = '/v1/control/moves/abort';

export function createControlRoutes(control: ControlService, admin: { checkAdmin(principal: string): void }): RouteGroup {
  return async (request) => {
    const path = request.url.pathname;
    if (path !== cellsPath && path !== namespacesPath && !path.startsWith(`${namespacesPath}/`) && path !== movesPath && path !== abortPath) return false;
    request.query.rejectUnknown();
    const { method, principal } = request;
    if (path === cellsPath && method === 'GET') {
      const { map } = await control.read(principal);
      return answer(request, { epoch: map.epoch, cells: map.cells });
    }
    if (path === namespacesPath && method === 'GET') return answer(request, (await control.read(principal)).map);
    if (path === movesPath && method === 'GET') return answer(request, { moves: (await control.read(principal)).map.moves ?? [] });
    if (method === 'GET') {
      const map = (await control.read(principal)).map;
      const prefix = prefixOf(path);
      const move = latestMove(map, prefix);
      return answer(request, move === undefined ? namespaceInfo(map, prefix) : { ...namespaceInfo(map, prefix), move });
    }
    admin.checkAdmin(principal);
    if (path === movesPath && method === 'POST') {
      const body = bodyObject(await readJson(request.req, request.limits.requestBytesMax), ['prefix', 'to']);
      const prefix = stringField(body, 'prefix');
      const to = stringField(body, 'to');
      // The request's own errors first, then the build gate (member-builds.ts): every member of
      // both cells that answers must apply landing imports.
      const before = (await control.read(principal)).map;
      const started = withMoveStarted(before, prefix, to, Date.now());
      const from = started.moves?.at(-1)?.from as string;
      await checkMoveBuilds([from, to].map((id) => before.cells.find((c) => c.id === id) as MapCell), 'refuse', protocolNeeded(nestedIn(before, prefix)));
      const map = await control.change(principal, (current) => withMoveStarted(current, prefix, to, Date.now()));
      return answer(request, { epoch: map.epoch, move: latestMove(map, prefix) });
    }
    if (path === abortPath && method === 'POST') {
      const body = bodyObject(await readJson(request.req, request.limits.requestBytesMax), ['prefix']);
      const prefix = stringField(body, 'prefix');
      const map = await control.change(principal, (current) => withMoveAborted(current, prefix, 'aborted by request', Date.now()));
      return answerChange(request, control, map, { move: latestMove(map, prefix) });
    }
    if (path === cellsPath && method === 'POST') {
      const body = bodyObject(await readJson(request.req, request.limits.requestBytesMax), ['id', 'endpoints']);
      const endpoints = body['endpoints'];
      if (!Array.isArray(endpoints) || !endpoints.every((e) => typeof e === 'string')) throw new InvalidArgumentError('endpoints must be a list of URLs');
      const map = await control.change(principal, (current) => withCell(current, { id: stringField(body, 'id'), endpoints: endpoints as string[] }));
      return answerChange(request, control, map, { epoch: map.epoch, cells: map.cells });
    }
    if (path === namespacesPath && method === 'POST') {
      const body = bodyObject(await readJson(request.req, request.limits.requestBytesMax), ['prefix', 'cell']);
      const prefix = stringField(body, 'prefix');
      const created = await createNamespace(control, principal, prefix, stringField(body, 'cell'));
      return answerChange(request, control, created.map, createdInfo(created, prefix));
    }
    if (path.startsWith(`${namespacesPath}/`) && method === 'DELETE') {
      const prefix = prefixOf(path);
      const map = await control.change(principal, (current) => withoutNamespace(current, prefix));
      return answerChange(request, control, map, { prefix, deleted: true });
    }
    throw new InvalidArgumentError(`no such endpoint: ${method} ${path}`);
  };
}

/** /v1/control/namespaces/payments/ names '/payments/'; /v1/control/namespaces/ the root. */
function prefixOf(path: string): string {
  return pathSegment(path.slice(namespacesPath.length), 'namespace');
}

function answer(request: RouteRequest, body: unknown): true {
  sendJson(request.res, request.context, 200, body);
  return true;
}

async function answerChange(request: RouteRequest, control: ControlService, map: CellMap, body: object): Promise<true> {
  const report = await control.push(map);
  return answer(request, { ...body, epoch: map.epoch, pushed: report.pushed, pending: report.pending });
}
