// The authorization policy (docs/design/authorization.md): roles are lists of permissions, each a
// byte range of keys and the operations allowed on it; principals (a certificate's CN, or a user)
// are bound to roles. `root` (the principal, or anyone bound to the role `root`) may do
// everything. Pure data and pure functions: the same policy record decides the same way on every
// member, at apply time for writes.

import { compareBytes, prefixEnd } from '../mvcc/index.js';

export const authOps = ['read', 'write', 'watch', 'lease', 'lock', 'election', 'admin'] as const;
export type AuthOp = (typeof authOps)[number];

export const rootName = 'root';

/** Keys in [from, to), compared as UTF-8 bytes; `to` null: every key from `from` on. */
export interface KeyRange {
  readonly from: Uint8Array;
  readonly to: Uint8Array | null;
}

export interface Permission {
  readonly range: KeyRange;
  readonly ops: ReadonlySet<AuthOp>;
}

export interface Policy {
  /** Off: everything is allowed (the state before an operator enables authorization). */
  readonly enabled: boolean;
  readonly roles: ReadonlyMap<string, readonly Permission[]>;
  readonly bindings: ReadonlyMap<string, readonly string[]>;
  /** Password users (etcd's Auth API): the edges verify their tokens; decisions do not read them. */
  readonly users: ReadonlyMap<string, { readonly salt?: string; readonly hash?: string; readonly epoch: number }>;
  /** Signs the users' tokens (base64); null until the first user exists. */
  readonly tokenKey: string | null;
}

export const openPolicy: Policy = { enabled: false, roles: new Map(), bindings: new Map(), users: new Map(), tokenKey: null };

const encoder = new TextEncoder();

/** The range of one key. */
export function keyRange(key: string): KeyRange {
  const from = encoder.encode(key);
  const to = new Uint8Array(from.length + 1);
  to.set(from);
  return { from, to };
}

/** The range of every key that starts with `prefix` (etcd's prefix end); '' is every key. */
export function prefixRange(prefix: string): KeyRange {
  const from = encoder.encode(prefix);
  // UTF-8 never holds 0xff, so only the empty prefix has no end.
  return { from, to: from.length === 0 ? null : prefixEnd(from) };
}

/** [key, rangeEnd) as etcd writes it (a bound of any bytes); an empty or absent end is the one key. */
export function boundedRange(key: string, rangeEnd: Uint8Array | undefined): KeyRange {
  if (rangeEnd === undefined || rangeEnd.length === 0) return keyRange(key);
  return { from: encoder.encode(key), to: rangeEnd };
}

/** `a` ≤ `b` as exclusive upper bounds (null: unbounded). */
function endAtMost(a: Uint8Array | null, b: Uint8Array | null): boolean {
  if (b === null) return true;
  if (a === null) return false;
  return compareBytes(a, b) <= 0;
}

/** Whether the union of `ranges` contains all of `wanted` (ranges may overlap or touch). */
export function covers(ranges: readonly KeyRange[], wanted: KeyRange): boolean {
  if (wanted.to !== null && compareBytes(wanted.from, wanted.to) >= 0) return true; // an empty range
  const sorted = [...ranges].sort((a, b) => compareBytes(a.from, b.from));
  let reached: Uint8Array = wanted.from; // everything in [wanted.from, reached) is covered
  for (const range of sorted) {
    if (compareBytes(range.from, reached) > 0) break; // a gap before this range
    if (range.to === null) return true;
    if (compareBytes(range.to, reached) > 0) reached = range.to;
    if (wanted.to !== null && endAtMost(wanted.to, reached)) return true;
  }
  return wanted.to !== null && endAtMost(wanted.to, reached);
}

/** Whether `principal` is root: the root principal, or bound to the root role. */
export function isRoot(policy: Policy, principal: string): boolean {
  return principal === rootName || (policy.bindings.get(principal) ?? []).includes(rootName);
}

/** The ranges on which `principal` may do `op`. */
export function rangesFor(policy: Policy, principal: string, op: AuthOp): KeyRange[] {
  const out: KeyRange[] = [];
  for (const role of policy.bindings.get(principal) ?? []) {
    for (const permission of policy.roles.get(role) ?? []) {
      if (permission.ops.has(op)) out.push(permission.range);
    }
  }
  return out;
}
