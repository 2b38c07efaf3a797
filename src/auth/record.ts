// The policy record's JSON, as the admin API takes it and as the store keeps it (opaque bytes in
// src/mvcc/policy-record.ts): validated here, at the boundary and again when read, with bounds.
//   { "enabled": false,
//     "roles": { "config-reader": [ { "prefix": "/config/", "ops": ["read", "watch"] },
//                                   { "key": "/a", "rangeEnd": "/b", "ops": ["read"] } ] },
//     "bindings": { "svc-a": ["config-reader"] },
//     "users": { "alice": { "salt": "<base64>", "hash": "<base64>", "epoch": 1 } },
//     "tokenKey": "<base64, 32 bytes>" }
// A permission names one key (`key`), a prefix (`prefix`), or [key, rangeEnd) (`rangeEnd` an
// exclusive bound compared as UTF-8 bytes). Users (etcd's Auth API) authenticate with a password
// (scrypt: salt and hash) for a token signed with `tokenKey`; a user's `epoch` moves when its
// password changes, which is what invalidates its tokens (no other change does: etcd #13300).
// A user without salt and hash has no password (etcd's --no-password: certificates only).
import { InvalidArgumentError } from '../base/errors.js';
import { keyNameProblem } from '../base/key-name.js';
import { authOps, keyRange, prefixRange, rootName, type AuthOp, type KeyRange, type Permission, type Policy } from './policy.js';

export interface PermissionJson {
  readonly key?: string;
  readonly prefix?: string;
  readonly rangeEnd?: string;
  readonly ops: readonly AuthOp[];
}

export interface UserJson {
  readonly salt?: string;
  readonly hash?: string;
  readonly epoch: number;
}

export interface PolicyJson {
  readonly enabled: boolean;
  readonly roles: Readonly<Record<string, readonly PermissionJson[]>>;
  readonly bindings: Readonly<Record<string, readonly string[]>>;
  readonly users?: Readonly<Record<string, UserJson>>;
  readonly tokenKey?: string;
}

export const policyLimits = { roles: 1_000, permissionsPerRole: 1_000, bindings: 10_000, rolesPerPrincipal: 100, users: 10_000 } as const;
const base64Pattern = /^[A-Za-z0-9+/]{1,256}={0,2}$/;
const namePattern = /^[A-Za-z0-9._@:-]{1,128}$/;
const encoder = new TextEncoder();

/** A validated policy from its JSON (the API's body, or the stored record); throws InvalidArgumentError. */
export function parsePolicyJson(json: unknown): PolicyJson {
  const object = record(json, 'the policy');
  for (const field of Object.keys(object)) {
    if (!['enabled', 'roles', 'bindings', 'users', 'tokenKey'].includes(field)) throw new InvalidArgumentError(`unknown policy field "${field}"`);
  }
  const enabled = object['enabled'] ?? false;
  if (typeof enabled !== 'boolean') throw new InvalidArgumentError('enabled must be true or false');
  const roles: Record<string, PermissionJson[]> = {};
  const rolesJson = record(object['roles'] ?? {}, 'roles');
  if (Object.keys(rolesJson).length > policyLimits.roles) throw new InvalidArgumentError(`at most ${policyLimits.roles} roles`);
  for (const [name, list] of Object.entries(rolesJson)) {
    checkName(name, 'role');
    if (!Array.isArray(list)) throw new InvalidArgumentError(`role ${name}: a list of permissions`);
    if (list.length > policyLimits.permissionsPerRole) throw new InvalidArgumentError(`role ${name}: at most ${policyLimits.permissionsPerRole} permissions`);
    roles[name] = list.map((permission, i) => parsePermission(permission, `role ${name} permission ${i}`));
  }
  const bindings: Record<string, string[]> = {};
  const bindingsJson = record(object['bindings'] ?? {}, 'bindings');
  if (Object.keys(bindingsJson).length > policyLimits.bindings) throw new InvalidArgumentError(`at most ${policyLimits.bindings} bound principals`);
  for (const [principal, list] of Object.entries(bindingsJson)) {
    checkName(principal, 'principal');
    if (!Array.isArray(list) || list.length > policyLimits.rolesPerPrincipal) {
      throw new InvalidArgumentError(`principal ${principal}: a list of at most ${policyLimits.rolesPerPrincipal} role names`);
    }
    for (const role of list) {
      if (typeof role !== 'string' || (role !== rootName && roles[role] === undefined)) {
        throw new InvalidArgumentError(`principal ${principal}: no role ${JSON.stringify(role)}`);
      }
    }
    bindings[principal] = [...new Set(list as string[])].sort();
  }
  const users: Record<string, UserJson> = {};
  const usersJson = record(object['users'] ?? {}, 'users');
  if (Object.keys(usersJson).length > policyLimits.users) throw new InvalidArgumentError(`at most ${policyLimits.users} users`);
  for (const [name, user] of Object.entries(usersJson)) {
    checkName(name, 'user');
    users[name] = parseUser(user, name);
  }
  const tokenKey = object['tokenKey'];
  if (tokenKey !== undefined && (typeof tokenKey !== 'string' || !base64Pattern.test(tokenKey))) {
    throw new InvalidArgumentError('tokenKey must be base64');
  }
  return {
    enabled, roles, bindings,
    ...(Object.keys(users).length === 0 ? {} : { users }),
    ...(tokenKey === undefined ? {} : { tokenKey }),
  };
}

function parseUser(json: unknown, name: string): UserJson {
  const object = record(json, `user ${name}`);
  for (const field of Object.keys(object)) {
    if (!['salt', 'hash', 'epoch'].includes(field)) throw new InvalidArgumentError(`user ${name}: unknown field "${field}"`);
  }
  const { salt, hash, epoch } = object as { salt?: unknown; hash?: unknown; epoch?: unknown };
  if ((salt === undefined) !== (hash === undefined)) throw new InvalidArgumentError(`user ${name}: salt and hash go together`);
  for (const value of [salt, hash]) {
    if (value !== undefined && (typeof value !== 'string' || !base64Pattern.test(value))) throw new InvalidArgumentError(`user ${name}: salt and hash are base64`);
  }
  if (typeof epoch !== 'number' || !Number.isSafeInteger(epoch) || epoch < 1) throw new InvalidArgumentError(`user ${name}: epoch is an integer >= 1`);
  return { ...(salt === undefined ? {} : { salt: salt as string, hash: hash as string }), epoch };
}

function parsePermission(json: unknown, where: string): PermissionJson {
  const object = record(json, where);
  for (const field of Object.keys(object)) {
    if (!['key', 'prefix', 'rangeEnd', 'ops'].includes(field)) throw new InvalidArgumentError(`${where}: unknown field "${field}"`);
  }
  const { key, prefix, rangeEnd, ops } = object as { key?: unknown; prefix?: unknown; rangeEnd?: unknown; ops?: unknown };
  if ((key === undefined) === (prefix === undefined)) throw new InvalidArgumentError(`${where}: give exactly one of key and prefix`);
  if (rangeEnd !== undefined && key === undefined) throw new InvalidArgumentError(`${where}: rangeEnd goes with key`);
  for (const [name, value] of [['key', key], ['prefix', prefix], ['rangeEnd', rangeEnd]] as const) {
    if (value === undefined) continue;
    if (typeof value !== 'string') throw new InvalidArgumentError(`${where}: ${name} must be a string`);
    const problem = name === 'rangeEnd' ? null : keyNameProblem(value);
    if (problem !== null) throw new InvalidArgumentError(`${where}: ${name} ${problem}`);
  }
  if (!Array.isArray(ops) || ops.length === 0) throw new InvalidArgumentError(`${where}: ops must list some of ${authOps.join(', ')}`);
  for (const op of ops) {
    if (!(authOps as readonly unknown[]).includes(op)) throw new InvalidArgumentError(`${where}: unknown op ${JSON.stringify(op)} (one of ${authOps.join(', ')})`);
  }
  return {
    ...(key === undefined ? {} : { key: key as string }),
    ...(prefix === undefined ? {} : { prefix: prefix as string }),
    ...(rangeEnd === undefined ? {} : { rangeEnd: rangeEnd as string }),
    ops: [...new Set(ops as AuthOp[])].sort(),
  };
}

/** The policy the decision reads. */
export function policyOf(json: PolicyJson): Policy {
  const roles = new Map<string, Permission[]>();
  for (const [name, list] of Object.entries(json.roles)) {
    roles.set(name, list.map((permission) => ({ range: rangeOf(permission), ops: new Set(permission.ops) })));
  }
  return {
    enabled: json.enabled,
    roles,
    bindings: new Map(Object.entries(json.bindings)),
    users: new Map(Object.entries(json.users ?? {})),
    tokenKey: json.tokenKey ?? null,
  };
}

function rangeOf(permission: PermissionJson): KeyRange {
  if (permission.prefix !== undefined) return prefixRange(permission.prefix);
  const key = permission.key as string;
  return permission.rangeEnd === undefined ? keyRange(key) : { from: encoder.encode(key), to: encoder.encode(permission.rangeEnd) };
}

/** The stored form: canonical JSON (sorted names), so equal policies are equal bytes. */
export function encodePolicyJson(json: PolicyJson): Uint8Array {
  const sorted = (object: Readonly<Record<string, unknown>>): Record<string, unknown> =>
    Object.fromEntries(Object.keys(object).sort().map((k) => [k, object[k]]));
  return encoder.encode(JSON.stringify({
    enabled: json.enabled,
    roles: sorted(json.roles),
    bindings: sorted(json.bindings),
    ...(json.users === undefined || Object.keys(json.users).length === 0 ? {} : { users: sorted(json.users) }),
    ...(json.tokenKey === undefined ? {} : { tokenKey: json.tokenKey }),
  }));
}

/** The stored record back (null: never set, the open policy). */
export function decodePolicyRecord(bytes: Uint8Array | null): PolicyJson {
  if (bytes === null) return { enabled: false, roles: {}, bindings: {} };
  return parsePolicyJson(JSON.parse(new TextDecoder().decode(bytes)));
}

function record(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new InvalidArgumentError(`${what} must be a JSON object`);
  return value as Record<string, unknown>;
}

function checkName(name: string, what: string): void {
  if (!namePattern.test(name)) throw new InvalidArgumentError(`${what} name ${JSON.stringify(name)}: 1 to 128 of letters, digits and . _ @ : -`);
}
