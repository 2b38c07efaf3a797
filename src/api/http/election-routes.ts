// Elections over HTTP (api.md): campaign (waits like an acquire), proclaim, resign, leader, and
// observe as a Server-Sent Events stream of leadership changes in revision order.
import { InvalidArgumentError, TooLargeError } from '../../base/errors.js';
import type { ElectionApi, LeaderInfo } from '../../lock/api.js';
import { sseMessage } from '../stream/event-json.js';
import { readJson } from './body.js';
import type { RouteGroup, RouteRequest } from './handler.js';
import { abandonSignal, bodyObject, bytesField, integerField, pathSegment, stringField } from './json-fields.js';
import { defaultAcquireWaitMs } from './lock-routes.js';
import { requestId, type Encoding } from './parse.js';
import { sendJson } from './respond.js';

export function createElectionRoutes(elections: ElectionApi): RouteGroup {
  return async (request) => {
    const path = request.url.pathname;
    if (!path.startsWith('/v1/elections/')) return false;
    await serveElection(elections, request, path.slice('/v1/elections/'.length).split('/'));
    return true;
  };
}

export function leaderJson(leader: LeaderInfo | null, encoding: Encoding): unknown {
  if (leader === null) return null;
  return { key: leader.key, value: Buffer.from(leader.value).toString(encoding), term: leader.term, lease: leader.lease };
}

async function serveElection(elections: ElectionApi, request: RouteRequest, parts: string[]): Promise<void> {
  const { req, res, method, context, query, limits } = request;
  const encoding = query.oneOf<Encoding>('encoding', ['utf8', 'base64'], 'utf8');
  query.rejectUnknown();
  if (parts.length !== 2) throw new InvalidArgumentError(`no such endpoint: ${method} ${request.url.pathname}`);
  const name = pathSegment(parts[0] ?? '', 'election name');
  const action = `${method} ${parts[1]}`;
  const id = requestId(req.headers);
  switch (action) {
    case 'POST campaign': {
      const body = bodyObject(await readJson(req, limits.requestBytesMax), ['lease', 'value', 'waitMs']);
      const won = await elections.campaign(
        name,
        {
          lease: integerField(body, 'lease', 1),
          value: bodyValue(body, encoding, limits.valueBytesMax),
          waitMs: integerField(body, 'waitMs', 0, defaultAcquireWaitMs),
          signal: abandonSignal(res),
        },
        id,
        request.principal,
      );
      return sendJson(res, context, 200, won, won.revision);
    }
    case 'POST proclaim': {
      const body = bodyObject(await readJson(req, limits.requestBytesMax), ['key', 'value']);
      const done = await elections.proclaim(name, stringField(body, 'key'), bodyValue(body, encoding, limits.valueBytesMax), id, request.principal);
      return sendJson(res, context, 200, done, done.revision);
    }
    case 'POST resign': {
      const body = bodyObject(await readJson(req, limits.requestBytesMax), ['key']);
      const done = await elections.resign(name, stringField(body, 'key'), id, request.principal);
      return sendJson(res, context, 200, { resigned: true, revision: done.revision }, done.revision);
    }
    case 'GET leader': {
      const current = await elections.leader(name, request.principal);
      return sendJson(res, context, 200, { revision: current.revision, leader: leaderJson(current.leader, encoding) }, current.revision);
    }
    case 'GET observe':
      return observe(elections, request, name, encoding);
  }
  throw new InvalidArgumentError(`no such endpoint: ${method} ${request.url.pathname}`);
}

function bodyValue(body: Readonly<Record<string, unknown>>, encoding: Encoding, max: number): Uint8Array {
  const value = bytesField(body, 'value', encoding);
  if (value.length > max) throw new TooLargeError('value', value.length, max);
  return value;
}

async function observe(elections: ElectionApi, request: RouteRequest, name: string, encoding: Encoding): Promise<void> {
  const { res, context } = request;
  const signal = abandonSignal(res);
  let opened = false;
  try {
    await elections.observe(
      name,
      (change) => {
        if (!opened) {
          opened = true;
          res.writeHead(200, {
            'content-type': 'text/event-stream; charset=utf-8',
            'cache-control': 'no-cache',
            'baton-revision': String(change.revision),
            'baton-cell': context.cellId,
          });
        }
        res.write(sseMessage({ revision: change.revision, leader: leaderJson(change.leader, encoding) }));
      },
      signal,
      request.principal,
    );
  } catch (error) {
    if (!opened) throw error;
    res.end(sseMessage({ error: { code: (error as { code?: string }).code ?? 'unavailable', message: (error as Error).message } }));
    return;
  }
  if (!res.writableEnded) res.end();
}
