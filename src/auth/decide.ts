// The one authorization decision: an operation is first turned into every access it makes
// (accesses.ts), then allowed only if each access is. A range access must be covered by the
// union of the principal's permissions for that operation; a key-less one (a lease grant) needs
// the operation on some range; `admin` needs it on every key.
import { covers, isRoot, rangesFor, type AuthOp, type KeyRange, type Policy } from './policy.js';

export type Access =
  | { readonly op: AuthOp; readonly range: KeyRange }
  /** An operation that names no key (lease grant and keepalive): allowed with the op on any range. */
  | { readonly op: AuthOp; readonly anyKey: true }
  /** What the cell is (its members, leader, revision): any known principal, never anonymous. */
  | { readonly op: 'read'; readonly clusterInfo: true };

export type Decision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly denied: Access; readonly reason: string };

const allowed: Decision = { allowed: true };
const everything: KeyRange = { from: new Uint8Array(0), to: null };

/** `principal` null is anonymous: denied everything once authorization is on. */
export function decide(policy: Policy, principal: string | null, accesses: readonly Access[]): Decision {
  if (!policy.enabled) return allowed;
  if (principal !== null && isRoot(policy, principal)) return allowed;
  for (const access of accesses) {
    if (principal === null) return { allowed: false, denied: access, reason: 'anonymous requests are refused while authorization is on' };
    if ('clusterInfo' in access) continue;
    const ranges = rangesFor(policy, principal, access.op);
    const ok = 'anyKey' in access ? ranges.length > 0
      : access.op === 'admin' ? covers(ranges, everything)
      : covers(ranges, access.range);
    if (!ok) return { allowed: false, denied: access, reason: `${principal} may not ${access.op} there` };
  }
  return allowed;
}
