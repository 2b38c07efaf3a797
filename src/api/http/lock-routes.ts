// Locks and the fencing check over HTTP (api.md, Locks). An acquire may wait (waitMs); if the
// client goes away meanwhile, its queue entry is deleted so nobody waits behind a ghost.
import { InvalidArgumentError } from '../../base/errors.js';
import type { LockApi } from '../../lock/api.js';
import { readJson } from './body.js';
import type { RouteGroup, RouteRequest } from './handler.js';
import { abandonSignal, bodyObject, integerField, pathSegment, stringField } from './json-fields.js';
import { requestId } from './parse.js';
import { sendJson } from './respond.js';

/** The default wait of an acquire that names none. */
export const defaultAcquireWaitMs = 30_000;

export function createLockRoutes(locks: LockApi): RouteGroup {
  return async (request) => {
    const path = request.url.pathname;
    if (path === '/v1/fencing/check' && request.method === 'POST') {
      await fencingCheck(locks, request);
      return true;
    }
    if (!path.startsWith('/v1/locks/')) return false;
    await serveLock(locks, request, path.slice('/v1/locks/'.length).split('/'));
    return true;
  };
}

async function serveLock(locks: LockApi, request: RouteRequest, parts: string[]): Promise<void> {
  const { req, res, method, context, query, limits } = request;
  query.rejectUnknown();
  const name = pathSegment(parts[0] ?? '', 'lock name');
  const action = parts.length === 2 ? parts[1] : parts.length === 1 ? '' : null;
  if (action === '' && method === 'GET') {
    const state = await locks.state(name, request.principal);
    return sendJson(res, context, 200, state, state.revision);
  }
  if (action === 'acquire' && method === 'POST') {
    const body = bodyObject(await readJson(req, limits.requestBytesMax), ['lease', 'owner', 'waitMs']);
    const acquired = await locks.acquire(
      name,
      {
        lease: integerField(body, 'lease', 1),
        owner: stringField(body, 'owner', ''),
        waitMs: integerField(body, 'waitMs', 0, defaultAcquireWaitMs),
        signal: abandonSignal(res),
      },
      requestId(req.headers),
      request.principal,
    );
    return sendJson(res, context, 200, acquired, acquired.revision);
  }
  if (action === 'release' && method === 'POST') {
    const body = bodyObject(await readJson(req, limits.requestBytesMax), ['key']);
    const released = await locks.release(name, stringField(body, 'key'), requestId(req.headers), request.principal);
    return sendJson(res, context, 200, { released: true, revision: released.revision }, released.revision);
  }
  throw new InvalidArgumentError(`no such endpoint: ${method} ${request.url.pathname}`);
}

async function fencingCheck(locks: LockApi, request: RouteRequest): Promise<void> {
  const { req, res, context, query, limits } = request;
  query.rejectUnknown();
  const body = bodyObject(await readJson(req, limits.requestBytesMax), ['lock', 'token']);
  const result = await locks.check(stringField(body, 'lock'), integerField(body, 'token', 1), request.principal);
  sendJson(res, context, 200, result, result.revision);
}
