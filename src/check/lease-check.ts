// Lease promises from a client history (keys attached with lease-put, read with lease-read):
// - a renewed lease's key never vanishes: a read that began after the put was acknowledged and
//   ended while the lease was certainly alive (see lease-evidence.ts) sees the put's value;
// - an expired lease's keys are gone: a read that began after the lease was certainly dead sees
//   no value written under it;
// - a dead lease stays dead: no renewal and no put under it is acknowledged once it was seen dead.
// Like the other checkers, a rule fires only on certain evidence; each lease-put writes its own
// key once, so whatever a read of that key sees was written under that put's lease.
import { formatRecord } from './history.js';
import { leaseEvidence, ofType, type LeaseEvidence } from './lease-evidence.js';
import type { CheckReport, OperationRecord, Violation } from './types.js';

export interface LeaseCheckReport extends CheckReport {
  readonly leases: number;
  readonly keys: number;
  readonly readsChecked: number;
}

export function checkLeases(records: readonly OperationRecord[]): LeaseCheckReport {
  const violations: Violation[] = [];
  const report = (kind: string, message: string): void => {
    violations.push({ checker: 'lease', kind, message });
  };
  const leases = leaseEvidence(records);
  const evidence = (leaseId: string): LeaseEvidence =>
    leases.get(leaseId) ?? { validUntilMs: -Infinity, endInvokeMs: Infinity, deadByMs: Infinity };
  const puts = ofType(records, 'lease-put');
  const putsByKey = new Map<string, (typeof puts)[number][]>();
  for (const put of puts) {
    if (put.status === 'fail') continue;
    putsByKey.set(put.operation.key, [...(putsByKey.get(put.operation.key) ?? []), put]);
  }
  let readsChecked = 0;
  for (const read of ofType(records, 'lease-read')) {
    if (read.result?.type !== 'lease-read') continue;
    const seen = read.result.value;
    for (const put of putsByKey.get(read.operation.key) ?? []) {
      const lease = evidence(put.operation.leaseId);
      const aliveUntil = Math.min(lease.validUntilMs, lease.endInvokeMs);
      const acknowledged = put.status === 'ok';
      if (acknowledged && read.invokeMs > put.completeMs && read.completeMs < aliveUntil) {
        readsChecked += 1;
        if (seen !== put.operation.value) {
          report(
            'live-key-vanished',
            `${formatRecord(read)}, but its lease ${put.operation.leaseId} was certainly alive until ` +
              `${aliveUntil.toFixed(1)} and the key was written by ${formatRecord(put)}`,
          );
        }
      }
      if (read.invokeMs > lease.deadByMs) {
        readsChecked += 1;
        if (seen !== null && seen === put.operation.value) {
          report(
            'dead-lease-key-survived',
            `${formatRecord(read)}, but lease ${put.operation.leaseId} of ${formatRecord(put)} was ` +
              `certainly gone by ${lease.deadByMs.toFixed(1)}`,
          );
        }
      }
    }
  }
  for (const [leaseId, lease] of leases) {
    for (const keepalive of ofType(records, 'lease-keepalive')) {
      const renewed = keepalive.result?.type === 'lease-keepalive' && !keepalive.result.expired;
      if (keepalive.operation.leaseId === leaseId && renewed && keepalive.invokeMs > lease.deadByMs) {
        report('dead-lease-renewed', `${formatRecord(keepalive)}, but lease ${leaseId} was gone by ${lease.deadByMs.toFixed(1)}`);
      }
    }
    for (const put of puts) {
      if (put.operation.leaseId === leaseId && put.status === 'ok' && put.invokeMs > lease.deadByMs) {
        report('put-on-dead-lease', `${formatRecord(put)}, but lease ${leaseId} was gone by ${lease.deadByMs.toFixed(1)}`);
      }
    }
  }
  const verdict = violations.length === 0 ? 'ok' : 'violation';
  return { verdict, violations, leases: leases.size, keys: putsByKey.size, readsChecked };
}
