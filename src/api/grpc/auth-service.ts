// etcd's Auth service over Baton's one policy record (src/auth/record.ts, docs/design/
// authorization.md): users, roles and grants are read-modify-writes of the record through the
// log (If-Version, retried when another change came first), so they are replicated, ordered and
// decided like every other write; management needs admin once authorization is on (the record's
// own rule), Authenticate and AuthStatus do not. etcd's permission types map onto Baton's
// operations: READ is read + watch, WRITE is write + lease + lock + election, READWRITE both.
// An etcd key is the Baton key without its leading '/' (keys.ts), so a role's range on etcd's
// app/ is Baton's /app/.
import { status } from '@grpc/grpc-js';
import { BatonError } from '../../base/errors.js';
import { bytesToKey, keyToBytes } from '../../base/key-bytes.js';
import { decodePolicyRecord, encodePolicyJson, rootName, type AuthOp, type PermissionJson, type PolicyJson, type UserJson } from '../../auth/index.js';
import type { CellApi } from '../types.js';
import { hashPassword, newSalt, newTokenKey, type AuthTokens } from '../auth-tokens.js';
import { GrpcStatusError } from './errors.js';
import type { HeaderSource, ResponseHeader } from './header.js';
import { prefixEnd } from './keys.js';

/** etcd's words (rpctypes), which etcd clients and etcdctl print. */
export const etcdAuthMessages = {
  rootUserMissing: 'etcdserver: root user does not exist',
  rootRoleMissing: 'etcdserver: root user does not have root role',
  userExists: 'etcdserver: user name already exists',
  userEmpty: 'etcdserver: user name is empty',
  userNotFound: 'etcdserver: user name not found',
  roleExists: 'etcdserver: role name already exists',
  roleEmpty: 'etcdserver: role name is empty',
  roleNotFound: 'etcdserver: role name not found',
  authFailed: 'etcdserver: authentication failed, invalid user ID or password',
  permissionNotGranted: 'etcdserver: permission is not granted to the role',
  roleNotGranted: 'etcdserver: role is not granted to the user',
  invalidAuthManagement: 'etcdserver: invalid auth management',
  authNotEnabled: 'etcdserver: authentication is not enabled',
} as const;

const readOps: readonly AuthOp[] = ['read', 'watch'];
const writeOps: readonly AuthOp[] = ['election', 'lease', 'lock', 'write'];
const allKeysEnd = '0'; // just past '/': Baton's end of every key (keys.ts)
const updateTriesMax = 8;

interface PermissionMsg {
  readonly permType?: number;
  readonly key?: Uint8Array;
  readonly range_end?: Uint8Array;
}

type Answer = { header: ResponseHeader };

const failed = (message: string): GrpcStatusError => new GrpcStatusError(status.FAILED_PRECONDITION, message);
const invalid = (message: string): GrpcStatusError => new GrpcStatusError(status.INVALID_ARGUMENT, message);

export class AuthFacade {
  constructor(
    private readonly cell: CellApi,
    private readonly headers: HeaderSource,
    private readonly tokens: AuthTokens,
  ) {}

  async authEnable(principal: string): Promise<Answer> {
    await this.update(principal, (policy) => {
      if (policy.users?.[rootName] === undefined) throw failed(etcdAuthMessages.rootUserMissing);
      if (!(policy.bindings[rootName] ?? []).includes(rootName)) throw failed(etcdAuthMessages.rootRoleMissing);
      return { ...policy, enabled: true };
    });
    return { header: this.headers.header() };
  }

  async authDisable(principal: string): Promise<Answer> {
    await this.update(principal, (policy) => ({ ...policy, enabled: false }));
    return { header: this.headers.header() };
  }

  async authStatus(): Promise<Answer & { enabled: boolean; authRevision: string }> {
    await this.cell.readBarrier();
    const stored = this.cell.localPolicyRecord();
    return { header: this.headers.header(), enabled: decodePolicyRecord(stored.record).enabled, authRevision: String(stored.version) };
  }

  async authenticate(request: { name?: string; password?: string }): Promise<Answer & { token: string }> {
    // Read as committed first: a user added a moment ago on another member authenticates here.
    await this.cell.readBarrier();
    if (!decodePolicyRecord(this.cell.localPolicyRecord().record).enabled) throw failed(etcdAuthMessages.authNotEnabled);
    const token = await this.tokens.authenticate(request.name ?? '', request.password ?? '');
    if (token === null) throw invalid(etcdAuthMessages.authFailed);
    return { header: this.headers.header(), token };
  }

  async userAdd(request: { name?: string; password?: string; options?: { no_password?: boolean } | null }, principal: string): Promise<Answer> {
    const name = request.name ?? '';
    if (name === '') throw invalid(etcdAuthMessages.userEmpty);
    const noPassword = request.options?.no_password === true;
    const salt = newSalt();
    const hash = noPassword ? null : await hashPassword(request.password ?? '', salt);
    await this.update(principal, (policy) => {
      if (policy.users?.[name] !== undefined) throw failed(etcdAuthMessages.userExists);
      const user: UserJson = hash === null ? { epoch: 1 } : { salt, hash, epoch: 1 };
      return { ...policy, users: { ...policy.users, [name]: user }, tokenKey: policy.tokenKey ?? newTokenKey() };
    });
    return { header: this.headers.header() };
  }

  async userGet(request: { name?: string }, principal: string): Promise<Answer & { roles: string[] }> {
    const policy = await this.read(principal);
    const name = request.name ?? '';
    if (policy.users?.[name] === undefined) throw failed(etcdAuthMessages.userNotFound);
    return { header: this.headers.header(), roles: [...(policy.bindings[name] ?? [])] };
  }

  async userList(principal: string): Promise<Answer & { users: string[] }> {
    const policy = await this.read(principal);
    return { header: this.headers.header(), users: Object.keys(policy.users ?? {}).sort() };
  }

  async userDelete(request: { name?: string }, principal: string): Promise<Answer> {
    const name = request.name ?? '';
    await this.update(principal, (policy) => {
      if (policy.users?.[name] === undefined) throw failed(etcdAuthMessages.userNotFound);
      if (policy.enabled && name === rootName) throw invalid(etcdAuthMessages.invalidAuthManagement);
      const { [name]: _gone, ...users } = policy.users;
      const { [name]: _unbound, ...bindings } = policy.bindings;
      return { ...policy, users, bindings };
    });
    return { header: this.headers.header() };
  }

  async userChangePassword(request: { name?: string; password?: string }, principal: string): Promise<Answer> {
    const name = request.name ?? '';
    const salt = newSalt();
    const hash = await hashPassword(request.password ?? '', salt);
    await this.update(principal, (policy) => {
      const user = policy.users?.[name];
      if (user === undefined) throw failed(etcdAuthMessages.userNotFound);
      // A new epoch: every token issued for the old password stops verifying, on every member.
      return { ...policy, users: { ...policy.users, [name]: { salt, hash, epoch: user.epoch + 1 } } };
    });
    return { header: this.headers.header() };
  }

  async userGrantRole(request: { user?: string; role?: string }, principal: string): Promise<Answer> {
    const name = request.user ?? '';
    const role = request.role ?? '';
    await this.update(principal, (policy) => {
      if (policy.users?.[name] === undefined) throw failed(etcdAuthMessages.userNotFound);
      if (policy.roles[role] === undefined) throw failed(etcdAuthMessages.roleNotFound);
      const granted = policy.bindings[name] ?? [];
      if (granted.includes(role)) return policy;
      return { ...policy, bindings: { ...policy.bindings, [name]: [...granted, role].sort() } };
    });
    return { header: this.headers.header() };
  }

  async userRevokeRole(request: { name?: string; role?: string }, principal: string): Promise<Answer> {
    const name = request.name ?? '';
    const role = request.role ?? '';
    await this.update(principal, (policy) => {
      if (policy.users?.[name] === undefined) throw failed(etcdAuthMessages.userNotFound);
      const granted = policy.bindings[name] ?? [];
      if (!granted.includes(role)) throw failed(etcdAuthMessages.roleNotGranted);
      if (policy.enabled && name === rootName && role === rootName) throw invalid(etcdAuthMessages.invalidAuthManagement);
      const rest = granted.filter((r) => r !== role);
      const { [name]: _old, ...others } = policy.bindings;
      return { ...policy, bindings: rest.length === 0 ? others : { ...others, [name]: rest } };
    });
    return { header: this.headers.header() };
  }

  async roleAdd(request: { name?: string }, principal: string): Promise<Answer> {
    const name = request.name ?? '';
    if (name === '') throw invalid(etcdAuthMessages.roleEmpty);
    await this.update(principal, (policy) => {
      if (policy.roles[name] !== undefined) throw failed(etcdAuthMessages.roleExists);
      return { ...policy, roles: { ...policy.roles, [name]: [] } };
    });
    return { header: this.headers.header() };
  }

  async roleGet(request: { role?: string }, principal: string): Promise<Answer & { perm: unknown[] }> {
    const policy = await this.read(principal);
    const permissions = policy.roles[request.role ?? ''];
    if (permissions === undefined) throw failed(etcdAuthMessages.roleNotFound);
    return { header: this.headers.header(), perm: permissions.map(etcdPermission) };
  }

  async roleList(principal: string): Promise<Answer & { roles: string[] }> {
    const policy = await this.read(principal);
    return { header: this.headers.header(), roles: Object.keys(policy.roles).sort() };
  }

  async roleDelete(request: { role?: string }, principal: string): Promise<Answer> {
    const role = request.role ?? '';
    await this.update(principal, (policy) => {
      if (policy.roles[role] === undefined) throw failed(etcdAuthMessages.roleNotFound);
      if (policy.enabled && role === rootName) throw invalid(etcdAuthMessages.invalidAuthManagement);
      const { [role]: _gone, ...roles } = policy.roles;
      const bindings: Record<string, string[]> = {};
      for (const [who, granted] of Object.entries(policy.bindings)) {
        const rest = granted.filter((r) => r !== role);
        if (rest.length > 0) bindings[who] = rest;
      }
      return { ...policy, roles, bindings };
    });
    return { header: this.headers.header() };
  }

  async roleGrantPermission(request: { name?: string; perm?: PermissionMsg | null }, principal: string): Promise<Answer> {
    const role = request.name ?? '';
    const granted = batonPermission(request.perm ?? {});
    await this.update(principal, (policy) => {
      const permissions = policy.roles[role];
      if (permissions === undefined) throw failed(etcdAuthMessages.roleNotFound);
      // As etcd: a grant on a range the role already has replaces that permission's type.
      const others = permissions.filter((p) => !sameRange(p, granted));
      return { ...policy, roles: { ...policy.roles, [role]: [...others, granted] } };
    });
    return { header: this.headers.header() };
  }

  async roleRevokePermission(request: { role?: string; key?: Uint8Array; range_end?: Uint8Array }, principal: string): Promise<Answer> {
    const role = request.role ?? '';
    const revoked = batonPermission({ key: request.key ?? new Uint8Array(0), range_end: request.range_end ?? new Uint8Array(0), permType: 0 });
    await this.update(principal, (policy) => {
      const permissions = policy.roles[role];
      if (permissions === undefined) throw failed(etcdAuthMessages.roleNotFound);
      const rest = permissions.filter((p) => !sameRange(p, revoked));
      if (rest.length === permissions.length) throw failed(etcdAuthMessages.permissionNotGranted);
      return { ...policy, roles: { ...policy.roles, [role]: rest } };
    });
    return { header: this.headers.header() };
  }

  /** The policy as committed, for a principal that administers the cell (anyone while off). */
  private async read(principal: string): Promise<PolicyJson> {
    return decodePolicyRecord((await this.cell.policyRecord(principal)).record);
  }

  /** One read-modify-write of the policy record through the log, again if another change came first. */
  private async update(principal: string, change: (policy: PolicyJson) => PolicyJson): Promise<void> {
    for (let tries = 1; ; tries++) {
      const stored = await this.cell.policyRecord(principal);
      const current = decodePolicyRecord(stored.record);
      const next = change(current);
      if (next === current) return;
      try {
        await this.cell.setPolicyRecord(encodePolicyJson(next), stored.version, principal);
        return;
      } catch (error) {
        if (!(error instanceof BatonError && error.code === 'precondition_failed') || tries >= updateTriesMax) throw error;
      }
    }
  }
}

/** An etcd permission as Baton's: its range over Baton keys, its type as operations. */
export function batonPermission(perm: PermissionMsg): PermissionJson {
  const key = Buffer.from(perm.key ?? new Uint8Array(0));
  const end = Buffer.from(perm.range_end ?? new Uint8Array(0));
  const type = perm.permType ?? 0;
  const ops = [...new Set([...(type === 0 || type === 2 ? readOps : []), ...(type === 1 || type === 2 ? writeOps : [])])].sort();
  const fromKey = end.length === 1 && end[0] === 0;
  if (key.length === 0 || (key.length === 1 && key[0] === 0)) {
    if (fromKey) return { prefix: '/', ops };
    throw invalid('etcdserver: permission key is empty');
  }
  const batonKey = `/${bytesToKey(key)}`;
  if (end.length === 0) return { key: batonKey, ops };
  if (fromKey) return { key: batonKey, rangeEnd: allKeysEnd, ops };
  if (Buffer.compare(prefixEnd(key), end) === 0) return { prefix: batonKey, ops };
  return { key: batonKey, rangeEnd: `/${bytesToKey(end)}`, ops };
}

/** Baton's permission as etcd's authpb.Permission. */
function etcdPermission(permission: PermissionJson): { permType: number; key: Buffer; range_end: Buffer } {
  const reads = permission.ops.includes('read');
  const writes = permission.ops.includes('write');
  const permType = reads && writes ? 2 : writes ? 1 : 0;
  if (permission.prefix !== undefined) {
    if (permission.prefix === '/') return { permType, key: Buffer.from([0]), range_end: Buffer.from([0]) };
    const key = keyToBytes(permission.prefix.slice(1));
    return { permType, key, range_end: prefixEnd(key) };
  }
  const key = keyToBytes((permission.key as string).slice(1));
  if (permission.rangeEnd === undefined) return { permType, key, range_end: Buffer.alloc(0) };
  if (permission.rangeEnd === allKeysEnd) return { permType, key, range_end: Buffer.from([0]) };
  return { permType, key, range_end: keyToBytes(permission.rangeEnd.slice(1)) };
}

function sameRange(a: PermissionJson, b: PermissionJson): boolean {
  return a.key === b.key && a.prefix === b.prefix && a.rangeEnd === b.rangeEnd;
}
