// The apply-time half of the one decision (docs/design/authorization.md): every member decides
// each client command against the policy record of the very state it applies on, so a permission
// removed at one entry cannot be used by any later entry, whatever the edge decided when it was
// proposed. The cell's own work (no principal: lease expiry, checkpoints, auto compaction) and
// entries from before authorization existed are not client requests and apply as they are.
import { PermissionDeniedError } from '../base/errors.js';
import { readLeaseKeys, readPolicyRecord, type CommandAuthorizer, type KvReader } from '../mvcc/index.js';
import { commandAccesses } from './accesses.js';
import { decide } from './decide.js';
import type { Policy } from './policy.js';
import { decodePolicyRecord, policyOf } from './record.js';

export function createAuthorizer(): CommandAuthorizer {
  // The parsed policy of the last version seen: a record changes rarely, commands often.
  let cached: { version: number; policy: Policy } | null = null;
  const policyAt = (state: KvReader): Policy => {
    const stored = readPolicyRecord(state);
    if (cached === null || cached.version !== stored.version) {
      cached = { version: stored.version, policy: policyOf(decodePolicyRecord(stored.record)) };
    }
    return cached.policy;
  };
  return (principal, op, state) => {
    if (principal === undefined) return null;
    const policy = policyAt(state);
    if (!policy.enabled) return null;
    const decision = decide(policy, principal === '' ? null : principal, commandAccesses(op, { leaseKeys: (lease) => readLeaseKeys(state, lease) }));
    // etcd's words, and nothing about which key or whether it exists.
    return decision.allowed ? null : new PermissionDeniedError('permission denied');
  };
}
