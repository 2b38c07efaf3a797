// Authorization's pure core (docs/design/authorization.md): the policy, every access of an
// operation, and the one decision. Wired into the node in later slices.
export { authOps, boundedRange, covers, keyRange, openPolicy, prefixRange, rootName, type AuthOp, type KeyRange, type Permission, type Policy } from './policy.js';
export { decide, type Access, type Decision } from './decide.js';
export { commandAccesses, leaseInfoAccesses, readAccesses, readRange, watchAccesses, watchEventAccess, type AccessLookup } from './accesses.js';
export { decodePolicyRecord, encodePolicyJson, parsePolicyJson, policyLimits, policyOf, type PermissionJson, type PolicyJson } from './record.js';
export { createAuthorizer } from './authorizer.js';
