// The serving member's half of the one decision (docs/design/authorization.md). Reads, watches,
// lease lookups, locks' and elections' state, membership and maintenance are decided here, against
// the policy this member has applied (a linearizable read has waited for its ReadIndex first, so it
// sees every policy change committed before it); writes are checked here before they are proposed
// (so a denied write costs no log entry and is refused also when there is no leader) and decided
// again at apply (authorizer.ts), which is what makes a removed permission unusable.
import { PermissionDeniedError, type BatonError } from '../base/errors.js';
import type { Command, Origin, StoredPolicy } from '../mvcc/index.js';
import { adminAccess, clusterInfoAccess, commandAccesses } from './accesses.js';
import { decide, type Access } from './decide.js';
import type { Policy } from './policy.js';
import { decodePolicyRecord, policyOf } from './record.js';

/** What the guard reads of the member's applied state (MvccStore). */
export interface GuardedState {
  policyRecord(): StoredPolicy;
  keysOfLease(lease: number): readonly string[];
}

/** Parses a stored policy once per version: a record changes rarely, requests come often. */
export function policyReader(): (stored: StoredPolicy) => Policy {
  let cached: { version: number; policy: Policy } | null = null;
  return (stored) => {
    if (cached === null || cached.version !== stored.version) {
      cached = { version: stored.version, policy: policyOf(decodePolicyRecord(stored.record)) };
    }
    return cached.policy;
  };
}

/** etcd's words, and nothing about which key or whether it exists. */
export const permissionDenied = (): PermissionDeniedError => new PermissionDeniedError('permission denied');

/** Told of every refusal (the audit log records the serving member's denials). */
export type DenialListener = (principal: string, denied: Access, reason: string) => void;

export class AccessGuard {
  private readonly parse = policyReader();

  constructor(
    private readonly state: GuardedState,
    private readonly onDenied: DenialListener | null = null,
  ) {}

  policy(): Policy {
    return this.parse(this.state.policyRecord());
  }

  get enabled(): boolean {
    return this.policy().enabled;
  }

  /** Whether `principal` ('' anonymous) may make every access; built only while authorization is on. */
  allows(principal: string, accesses: () => readonly Access[]): boolean {
    const policy = this.policy();
    if (!policy.enabled) return true;
    const decision = decide(policy, principal === '' ? null : principal, accesses());
    if (!decision.allowed) this.onDenied?.(principal, decision.denied, decision.reason);
    return decision.allowed;
  }

  /** Throws permission_denied unless `principal` may make every access. */
  check(principal: string, accesses: () => readonly Access[]): void {
    if (!this.allows(principal, accesses)) throw permissionDenied();
  }

  /** Administration (members, maintenance, snapshots, the policy): admin on every key. */
  checkAdmin(principal: string): void {
    this.check(principal, () => [adminAccess]);
  }

  /** The cell's status and member list: any known principal. */
  checkClusterInfo(principal: string): void {
    this.check(principal, () => [clusterInfoAccess]);
  }

  /** A write's check before it is proposed; the cell's own work is not a client's request. */
  command(origin: Origin, op: Command): BatonError | null {
    if (origin === undefined) return null;
    const allowed = this.allows(origin, () => commandAccesses(op, { leaseKeys: (lease) => this.state.keysOfLease(lease) }));
    return allowed ? null : permissionDenied();
  }
}
