// The authorization policy (docs/design/authorization.md), replicated state changed through the
// log:
//   GET /v1/auth/policy   {version, enabled, roles, bindings} (linearizable)
//   PUT /v1/auth/policy   the whole policy, with If-Version: the version it was read at (0 before
//                         the first change); another change in between is 412 precondition_failed
// Both are administration (admin on every key once enabled). Enabling needs the caller to be root
// under the new policy (the root principal, or bound to the role root), as etcd's auth enable
// needs the root user: nobody can lock every administrator out with one request.
import { InvalidArgumentError } from '../../base/errors.js';
import { decodePolicyRecord, encodePolicyJson, isRoot, parsePolicyJson, policyOf } from '../../auth/index.js';
import type { CellApi } from '../types.js';
import { readJson } from './body.js';
import type { RouteGroup } from './handler.js';
import { headerInteger } from './parse.js';
import { sendJson } from './respond.js';

export const policyPath = '/v1/auth/policy';

export function createAuthRoutes(cell: CellApi): RouteGroup {
  return async (request) => {
    if (request.url.pathname !== policyPath) return false;
    request.query.rejectUnknown();
    if (request.method === 'GET') {
      const stored = await cell.policyRecord(request.principal);
      sendJson(request.res, request.context, 200, { version: stored.version, ...decodePolicyRecord(stored.record) });
      return true;
    }
    if (request.method !== 'PUT') throw new InvalidArgumentError(`no such endpoint: ${request.method} ${policyPath}`);
    const ifVersion = headerInteger(request.req.headers, 'if-version', 0);
    if (ifVersion === undefined) throw new InvalidArgumentError('PUT /v1/auth/policy needs If-Version: the version it was read at (0: never set)');
    cell.checkAdmin(request.principal); // refused before anything about the body is said
    const policy = parsePolicyJson(await readJson(request.req, request.limits.requestBytesMax));
    if (policy.enabled && !isRoot(policyOf(policy), request.principal)) {
      throw new InvalidArgumentError(
        `enabling authorization needs the caller to be root under the new policy: ${request.principal === '' ? 'an anonymous caller' : request.principal} would not be`,
      );
    }
    const { version } = await cell.setPolicyRecord(encodePolicyJson(policy), ifVersion, request.principal);
    sendJson(request.res, request.context, 200, { version });
    return true;
  };
}
