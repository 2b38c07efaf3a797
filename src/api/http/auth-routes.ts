// The authorization policy (docs/design/authorization.md), replicated state changed through the
// log:
//   GET /v1/auth/policy   {version, enabled, roles, bindings} (linearizable)
//   PUT /v1/auth/policy   roles, bindings and enabled, with If-Version: the version it was read at
//                         (0 before the first change); another change in between is 412
//                         precondition_failed. Users (etcd's Auth API) are kept as they are.
//   POST /v1/auth/authenticate {name, password}  a user's token, for `Authorization: Bearer TOKEN`
// Both are administration (admin on every key once enabled). Enabling needs the caller to be root
// under the new policy (the root principal, or bound to the role root), as etcd's auth enable
// needs the root user: nobody can lock every administrator out with one request.
import { InvalidArgumentError, UnauthenticatedError } from '../../base/errors.js';
import { tokenTtlMs, type AuthTokens } from '../auth-tokens.js';
import { decodePolicyRecord, encodePolicyJson, isRoot, parsePolicyJson, policyOf } from '../../auth/index.js';
import type { CellApi } from '../types.js';
import { readJson } from './body.js';
import { bodyObject, stringField } from './json-fields.js';
import type { RouteGroup } from './handler.js';
import { headerInteger } from './parse.js';
import { sendJson } from './respond.js';

export const policyPath = '/v1/auth/policy';

export const authenticatePath = '/v1/auth/authenticate';

export function createAuthRoutes(cell: CellApi, tokens: Pick<AuthTokens, 'authenticate'>): RouteGroup {
  return async (request) => {
    if (request.url.pathname === authenticatePath && request.method === 'POST') {
      // A user's password for a token (Authorization: Bearer TOKEN on later requests).
      request.query.rejectUnknown();
      const body = bodyObject(await readJson(request.req, request.limits.requestBytesMax), ['name', 'password']);
      await cell.readBarrier();
      const token = await tokens.authenticate(stringField(body, 'name'), stringField(body, 'password'));
      if (token === null) throw new UnauthenticatedError('authentication failed: no such user, or a wrong password');
      sendJson(request.res, request.context, 200, { token, ttlMs: tokenTtlMs });
      return true;
    }
    if (request.url.pathname !== policyPath) return false;
    request.query.rejectUnknown();
    if (request.method === 'GET') {
      const stored = await cell.policyRecord(request.principal);
      const { users, tokenKey: _secret, ...policy } = decodePolicyRecord(stored.record);
      // Users are listed with their epochs only: password hashes and the token key never leave.
      const userList = Object.fromEntries(Object.entries(users ?? {}).map(([name, user]) => [name, { epoch: user.epoch, password: user.hash !== undefined }]));
      sendJson(request.res, request.context, 200, { version: stored.version, ...policy, users: userList });
      return true;
    }
    if (request.method !== 'PUT') throw new InvalidArgumentError(`no such endpoint: ${request.method} ${policyPath}`);
    const ifVersion = headerInteger(request.req.headers, 'if-version', 0);
    if (ifVersion === undefined) throw new InvalidArgumentError('PUT /v1/auth/policy needs If-Version: the version it was read at (0: never set)');
    cell.checkAdmin(request.principal); // refused before anything about the body is said
    const body = await readJson(request.req, request.limits.requestBytesMax);
    if (body !== null && typeof body === 'object' && ('users' in body || 'tokenKey' in body)) {
      throw new InvalidArgumentError('users and their passwords are managed through the etcd Auth API (etcdctl user ...), not in the policy body');
    }
    // Roles, bindings and enabled are replaced; the users and the token key are kept as they are.
    const current = decodePolicyRecord((await cell.policyRecord(request.principal)).record);
    const policy = parsePolicyJson({
      ...(body as object),
      ...(current.users === undefined ? {} : { users: current.users }),
      ...(current.tokenKey === undefined ? {} : { tokenKey: current.tokenKey }),
    });
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
