// The apply-time half of the one decision (docs/design/authorization.md): every member decides
// each client command against the policy record of the very state it applies on, so a permission
// removed at one entry cannot be used by any later entry, whatever the edge decided when it was
// proposed. The cell's own work (no principal: lease expiry, checkpoints, auto compaction) and
// entries from before authorization existed are not client requests and apply as they are.
import { readLeaseKeys, readPolicyRecord, type CommandAuthorizer, type KvReader } from '../mvcc/index.js';
import { commandAccesses } from './accesses.js';
import { decide } from './decide.js';
import { permissionDenied, policyReader } from './guard.js';

export function createAuthorizer(): CommandAuthorizer {
  const policyOfState = policyReader();
  return (principal, op, state: KvReader) => {
    if (principal === undefined) return null;
    const policy = policyOfState(readPolicyRecord(state));
    if (!policy.enabled) return null;
    const decision = decide(policy, principal === '' ? null : principal, commandAccesses(op, { leaseKeys: (lease) => readLeaseKeys(state, lease) }));
    return decision.allowed ? null : permissionDenied();
  };
}
