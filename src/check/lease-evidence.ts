// What a client history proves about each lease's life, as certain bounds (shared by the lock
// and lease checkers). The server never cuts a TTL short and times a lease on the monotonic clock
// from no earlier than the grant's or keepalive's invoke, so an acknowledged grant or renewal
// invoked at t keeps the lease alive at least until t + TTL. A lease is certainly dead once a
// keepalive answered "expired" (lease_not_found) or a revoke was acknowledged.
import type { LockOperation, Operation, OperationRecord } from './types.js';

export interface LeaseEvidence {
  /** Lower bound on the lease's end (-Infinity when no grant or renewal was acknowledged). */
  validUntilMs: number;
  /** The earliest invoke of a revoke that may have happened. */
  endInvokeMs: number;
  /** Certainly dead from here on (Infinity when never proved). */
  deadByMs: number;
}

export function ofType<T extends LockOperation['type']>(
  records: readonly OperationRecord[],
  type: T,
): OperationRecord<Extract<Operation, { type: T }>>[] {
  return records.filter(
    (r): r is OperationRecord<Extract<Operation, { type: T }>> => r.operation.type === type,
  );
}

export function leaseEvidence(records: readonly OperationRecord[]): Map<string, LeaseEvidence> {
  const leases = new Map<string, LeaseEvidence>();
  const evidence = (leaseId: string): LeaseEvidence => {
    let found = leases.get(leaseId);
    if (found === undefined) {
      found = { validUntilMs: -Infinity, endInvokeMs: Infinity, deadByMs: Infinity };
      leases.set(leaseId, found);
    }
    return found;
  };
  for (const grant of ofType(records, 'lease-grant')) {
    if (grant.result?.type !== 'lease-grant') continue;
    const lease = evidence(grant.result.leaseId);
    lease.validUntilMs = Math.max(lease.validUntilMs, grant.invokeMs + grant.operation.ttlMs);
  }
  for (const keepalive of ofType(records, 'lease-keepalive')) {
    if (keepalive.result?.type !== 'lease-keepalive') continue;
    const lease = evidence(keepalive.operation.leaseId);
    if (keepalive.result.expired) {
      lease.deadByMs = Math.min(lease.deadByMs, keepalive.completeMs);
    } else {
      const until = keepalive.invokeMs + keepalive.operation.ttlMs;
      lease.validUntilMs = Math.max(lease.validUntilMs, until);
    }
  }
  for (const revoke of ofType(records, 'lease-revoke')) {
    if (revoke.status === 'fail') continue;
    const lease = evidence(revoke.operation.leaseId);
    lease.endInvokeMs = Math.min(lease.endInvokeMs, revoke.invokeMs);
    if (revoke.status === 'ok') lease.deadByMs = Math.min(lease.deadByMs, revoke.completeMs);
  }
  return leases;
}
