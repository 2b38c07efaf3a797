// Lock safety from a client history: holds never certainly overlap, fencing tokens are unique
// and follow real time, no lock goes to a lease already seen dead, and the fencing guard never
// accepted a write whose token a newer accepted write had already superseded.
//
// Every rule claims a violation only on certain evidence, since client timings bound, but do not
// fix, when the server acted:
// - a hold starts at its grant, somewhere in [acquire invoke, acquire ok];
// - it certainly lasts until the earliest of: the invoke of a release of its token (or of a
//   revoke of its lease) that may have happened, and the lease's promised validity, the latest
//   (grant or keepalive invoke + TTL) among acknowledged ones. The server never cuts a TTL short,
//   so a lease renewed at invoke time t lives at least until t + TTL;
// - a lease is certainly dead once a keepalive answered "expired", or a revoke was acknowledged.
import { leaseEvidence, ofType } from './lease-evidence.js';
import type { CheckReport, OperationRecord, Violation } from './types.js';

interface Hold {
  readonly record: OperationRecord;
  readonly lock: string;
  readonly leaseId: string;
  readonly fencingToken: number;
  readonly invokeMs: number;
  readonly okMs: number;
  /** Until when the hold certainly lasted (a lower bound on its real end). */
  readonly certainEndMs: number;
}

function holdsOf(records: readonly OperationRecord[]): Hold[] {
  const leases = leaseEvidence(records);
  const releaseInvoke = new Map<string, number>();
  for (const release of ofType(records, 'release')) {
    if (release.status === 'fail') continue;
    const id = `${release.operation.lock}\u0000${release.operation.fencingToken}`;
    releaseInvoke.set(id, Math.min(releaseInvoke.get(id) ?? Infinity, release.invokeMs));
  }
  const holds: Hold[] = [];
  for (const acquire of ofType(records, 'acquire')) {
    if (acquire.result?.type !== 'acquire') continue;
    const { lock, leaseId } = acquire.operation;
    const fencingToken = acquire.result.fencingToken;
    const lease = leases.get(leaseId);
    const released = releaseInvoke.get(`${lock}\u0000${fencingToken}`) ?? Infinity;
    const leaseEnd =
      lease === undefined ? -Infinity : Math.min(lease.validUntilMs, lease.endInvokeMs);
    const certainEndMs = Math.min(released, leaseEnd);
    holds.push({
      record: acquire,
      lock,
      leaseId,
      fencingToken,
      invokeMs: acquire.invokeMs,
      okMs: acquire.completeMs,
      certainEndMs,
    });
  }
  return holds;
}

/** Whole milliseconds as they are; a runner's fractional clock to 0.1 ms. */
function ms(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

function describe(hold: Hold): string {
  const end = hold.certainEndMs === -Infinity ? 'unknown' : ms(hold.certainEndMs);
  return (
    `p${hold.record.process} holds ${hold.lock} with token ${hold.fencingToken} ` +
    `(lease ${hold.leaseId}, granted in [${ms(hold.invokeMs)} .. ${ms(hold.okMs)}], ` +
    `certainly held until ${end})`
  );
}

export function checkLockSafety(records: readonly OperationRecord[]): CheckReport {
  const violations: Violation[] = [];
  const report = (kind: string, message: string): void => {
    violations.push({ checker: 'lock-safety', kind, message });
  };
  const holds = holdsOf(records);
  const byLock = new Map<string, Hold[]>();
  for (const hold of holds) byLock.set(hold.lock, [...(byLock.get(hold.lock) ?? []), hold]);
  for (const lockHolds of byLock.values()) checkHolds(lockHolds, report);
  const leases = leaseEvidence(records);
  for (const hold of holds) {
    const deadByMs = leases.get(hold.leaseId)?.deadByMs ?? Infinity;
    if (deadByMs < hold.invokeMs) {
      report('dead-lease-grant', `${describe(hold)}, but its lease was gone by ${deadByMs}`);
    }
  }
  checkGuard(records, report);
  return { verdict: violations.length === 0 ? 'ok' : 'violation', violations };
}

function checkHolds(holds: readonly Hold[], report: (kind: string, message: string) => void): void {
  const sorted = [...holds].sort((a, b) => a.fencingToken - b.fencingToken || a.okMs - b.okMs);
  for (let i = 0; i < sorted.length; i++) {
    const a = sorted[i] as Hold;
    for (let j = i + 1; j < sorted.length; j++) {
      const b = sorted[j] as Hold;
      if (a.fencingToken === b.fencingToken) {
        report('shared-token', `two grants share a token: ${describe(a)}; ${describe(b)}`);
        continue;
      }
      // The cell says a was granted before b (smaller token), and b was granted by b.okMs, so
      // a still held at b's grant. Unless real time contradicts the tokens (b acknowledged
      // before a was even asked for): that is the token rule's finding, not an overlap.
      if (b.okMs < a.certainEndMs && a.invokeMs <= b.okMs) {
        report('double-owner', `${describe(b)} while ${describe(a)}`);
      }
    }
  }
  // Real time: a grant acknowledged before another acquire was even invoked came first, so its
  // token must be smaller.
  for (const a of holds) {
    for (const b of holds) {
      if (a.okMs < b.invokeMs && a.fencingToken >= b.fencingToken) {
        report('token-not-increasing', `${describe(b)} came after ${describe(a)}`);
      }
    }
  }
}

function checkGuard(
  records: readonly OperationRecord[],
  report: (kind: string, message: string) => void,
): void {
  const accepted = ofType(records, 'guarded-write').filter(
    (r) => r.result?.type === 'guarded-write' && r.result.accepted,
  );
  // A write accepted with token t certainly reached the guard before its ok; a later write
  // (invoked after that) with a smaller token is stale and must have been rejected.
  for (const newer of accepted) {
    for (const stale of accepted) {
      const same = newer.operation.resource === stale.operation.resource;
      if (!same || newer.completeMs >= stale.invokeMs) continue;
      if (stale.operation.fencingToken < newer.operation.fencingToken) {
        report(
          'stale-write-accepted',
          `the guard of ${stale.operation.resource} accepted token ` +
            `${stale.operation.fencingToken} from p${stale.process} at ` +
            `[${ms(stale.invokeMs)} .. ${ms(stale.completeMs)}] after accepting token ` +
            `${newer.operation.fencingToken} from p${newer.process} by ${ms(newer.completeMs)}`,
        );
      }
    }
  }
}
