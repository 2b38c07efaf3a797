// Authorization's pure core (docs/design/authorization.md): the policy, every access of an
// operation, the one decision (guard.ts at the serving member, authorizer.ts at apply).
export { authOps, boundedRange, covers, isRoot, keyRange, openPolicy, prefixRange, rootName, type AuthOp, type KeyRange, type Permission, type Policy } from './policy.js';
export { decide, type Access, type Decision } from './decide.js';
export {
  adminAccess, clusterInfoAccess, commandAccesses, electionAccesses, leaseAccess, leaseInfoAccesses, lockAccesses, readAccesses, readRange, watchAccesses,
  watchEventAccess, type AccessLookup,
} from './accesses.js';
export { AccessGuard, permissionDenied, type DenialListener, type GuardedState } from './guard.js';
export { decodePolicyRecord, encodePolicyJson, parsePolicyJson, policyLimits, policyOf, type PermissionJson, type PolicyJson, type UserJson } from './record.js';
export { createAuthorizer } from './authorizer.js';
