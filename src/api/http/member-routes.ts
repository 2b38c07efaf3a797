// Cluster membership over HTTP (docs/api/README.md, "Members"):
//   GET    /v1/cluster/members                  the committed configuration, role voter|learner
//   POST   /v1/cluster/members                  {"name","peerUrl","clientUrl"}: add as a learner
//   POST   /v1/cluster/members/{id}/promote     learner -> voter, once it has caught up
//   DELETE /v1/cluster/members/{id}             remove a voter or a learner
//   POST   /v1/cluster/leader                   {"to": id}: hand leadership to that voter (etcd's
//                                               MoveLeader); answers once the leader sees it lead
// Changes are made by the leader, one at a time; any other member forwards the request to it
// (as it forwards writes), so an operator may talk to any node.
import type { IncomingMessage } from 'node:http';
import { InvalidArgumentError, UnavailableError } from '../../base/errors.js';
import type { Membership, NewMember } from '../../membership/membership.js';
import { memberNamePattern, memberUrlBytesMax } from '../../membership/member-directory.js';
import { readJson } from './body.js';
import type { RouteGroup, RouteRequest } from './handler.js';
import { parseInteger, requestId } from './parse.js';
import { sendJson } from './respond.js';

const membersPath = '/v1/cluster/members';
const leaderPath = '/v1/cluster/leader';
/** Marks a request a member forwarded to the leader: it is never forwarded a second time. */
const forwardedHeader = 'baton-forwarded';

interface CellInfo {
  status(): { cell: string; clusterId: string; leader: number };
  /** Changes of membership and leadership are administration; the member list is cluster info. */
  checkAdmin(principal: string): void;
  checkClusterInfo(principal: string): void;
}

export function createMemberRoutes(
  membership: Membership,
  cell: CellInfo,
  reads: { linearizableRead(): Promise<void> },
): RouteGroup {
  return async (request) => {
    const path = request.url.pathname;
    const { method } = request;
    if (path === leaderPath && method === 'POST') {
      cell.checkAdmin(request.principal);
      request.query.rejectUnknown();
      const body = await readJson(request.req, request.limits.requestBytesMax);
      const to = (body as { to?: unknown } | null)?.to;
      if (typeof to !== 'number' || !Number.isSafeInteger(to) || to < 1) throw new InvalidArgumentError('expected {"to": the member id of a voter}');
      if (await forwarded(request, membership, JSON.stringify({ to }))) return true;
      await membership.transferLeadership(to);
      sendJson(request.res, request.context, 200, { leader: to });
      return true;
    }
    if (path !== membersPath && !path.startsWith(`${membersPath}/`)) return false;
    if (path === membersPath && method === 'GET') {
      cell.checkClusterInfo(request.principal);
      const consistency = request.query.oneOf('consistency', ['linearizable', 'serializable'] as const, 'linearizable');
      request.query.rejectUnknown();
      if (consistency === 'linearizable') await reads.linearizableRead();
      const status = cell.status();
      sendJson(request.res, request.context, 200, {
        cell: status.cell,
        clusterId: status.clusterId,
        leader: status.leader,
        members: membership.members(),
      });
      return true;
    }
    cell.checkAdmin(request.principal);
    request.query.rejectUnknown();
    const id = requestId(request.req.headers);
    // A retry is recognized from the replicated change history: read it as committed first.
    const caughtUp = async (): Promise<void> => {
      if (id !== undefined) await reads.linearizableRead();
    };
    if (path === membersPath && method === 'POST') {
      // A member passing on etcd's MemberAdd (src/api/grpc/member-service.ts) sends clientUrl '':
      // etcd's request names none. The native API itself always asks for one.
      const fromMember = request.req.headers[forwardedHeader] !== undefined;
      const input = parseNewMember(await readJson(request.req, request.limits.requestBytesMax), fromMember);
      if (await forwarded(request, membership, JSON.stringify(input))) return true;
      await caughtUp();
      const added = await membership.add(input, id);
      sendJson(request.res, request.context, 201, { ...added, initialClusterState: 'existing' });
      return true;
    }
    const match = /^\/v1\/cluster\/members\/([^/]+)(\/promote)?$/.exec(path);
    if (match === null) throw new InvalidArgumentError(`no such endpoint: ${method} ${path}`);
    const memberId = parseInteger(match[1] as string, 'member id', 1);
    if (match[2] !== undefined && method === 'POST') {
      if (await forwarded(request, membership, null)) return true;
      await caughtUp();
      sendJson(request.res, request.context, 200, { member: await membership.promote(memberId, id) });
      return true;
    }
    if (match[2] === undefined && method === 'DELETE') {
      if (await forwarded(request, membership, null)) return true;
      await caughtUp();
      if (membership.isSelf(memberId) && !membership.isRecordedRemoval(id)) {
        // The leader removing itself hands over first, then the new leader makes the change.
        await membership.handOffLeadership();
        if (request.req.headers[forwardedHeader] !== undefined) {
          throw new UnavailableError('leadership was handed over before this removal; retry it');
        }
        if (await forwarded(request, membership, null)) return true;
      }
      sendJson(request.res, request.context, 200, { member: await membership.remove(memberId, id) });
      return true;
    }
    throw new InvalidArgumentError(`no such endpoint: ${method} ${path}`);
  };
}

function parseNewMember(body: unknown, fromMember: boolean): NewMember {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new InvalidArgumentError('expected a JSON object {"name", "peerUrl", "clientUrl"}');
  }
  const fields = body as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (!['name', 'peerUrl', 'clientUrl'].includes(key)) throw new InvalidArgumentError(`unknown field "${key}"`);
  }
  const { name } = fields;
  if (typeof name !== 'string' || !memberNamePattern.test(name)) {
    throw new InvalidArgumentError('name: 1-64 letters, digits, - and _');
  }
  const clientUrl = fromMember && fields['clientUrl'] === '' ? '' : httpUrl(fields['clientUrl'], 'clientUrl');
  return { name, peerUrl: httpUrl(fields['peerUrl'], 'peerUrl'), clientUrl };
}

/** http://HOST:PORT, without a trailing slash (the form the member table keeps). */
function httpUrl(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') throw new InvalidArgumentError(`${what} is required (http://HOST:PORT)`);
  if (Buffer.byteLength(value) > memberUrlBytesMax) throw new InvalidArgumentError(`${what} is over ${memberUrlBytesMax} bytes`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError(`${what}: "${value}" is not a URL`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.port === '' || (url.pathname !== '/' && url.pathname !== '') || url.search !== '') {
    throw new InvalidArgumentError(`${what}: "${value}" must be http://HOST:PORT (https:// with TLS)`);
  }
  return `http://${url.host}`;
}

/** Sends the request on to the leader and relays its answer; false when this node leads. */
async function forwarded(request: RouteRequest, membership: Membership, body: string | null): Promise<boolean> {
  const leaderUrl = membership.leaderClientUrl();
  if (leaderUrl === '') return false;
  if (leaderUrl === null || request.req.headers[forwardedHeader] !== undefined) {
    throw new UnavailableError('no leader known to take the membership change; retry shortly');
  }
  let answer: Response;
  try {
    answer = await fetch(`${leaderUrl}${request.url.pathname}`, {
      method: request.method,
      headers: { [forwardedHeader]: '1', ...(body === null ? {} : { 'content-type': 'application/json' }), ...requestIdHeader(request.req) },
      ...(body === null ? {} : { body }),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    throw new UnavailableError(`could not reach the leader at ${leaderUrl}: ${(error as Error).message}`);
  }
  const text = await answer.text();
  request.res.writeHead(answer.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'baton-revision': answer.headers.get('baton-revision') ?? String(request.context.revision()),
    'baton-cell': request.context.cellId,
    ...(answer.headers.get('retry-after') !== null ? { 'retry-after': answer.headers.get('retry-after') as string } : {}),
  });
  request.res.end(text);
  return true;
}

function requestIdHeader(req: IncomingMessage): Record<string, string> {
  const id = req.headers['request-id'];
  return typeof id === 'string' ? { 'request-id': id } : {};
}
