// The lock-safety checker on hand-made histories: a double owner, a shared or non-increasing
// token, a grant to a lease already seen dead, and a stale write the guard accepted are each
// rejected with their kind; clean hand-offs (release, lease expiry, a paused holder whose lease
// ran out) are accepted, since the checker only claims what the timings prove.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkLockSafety, type OperationRecord } from '../../../src/check/index.js';
import { leaseBuilders, record } from './builders.js';

const { grant, keepalive } = leaseBuilders(1_000);

function acquire(p: number, from: number, to: number, leaseId: string, fencingToken: number) {
  const op = { type: 'acquire', lock: 'L', leaseId } as const;
  return record(p, from, to, op, { type: 'acquire', fencingToken });
}
function release(p: number, at: number, fencingToken: number): OperationRecord {
  return record(p, at, at + 5, { type: 'release', lock: 'L', fencingToken }, { type: 'release' });
}
function guarded(p: number, from: number, to: number, fencingToken: number, accepted: boolean) {
  const op = { type: 'guarded-write', resource: 'db', fencingToken } as const;
  return record(p, from, to, op, { type: 'guarded-write', accepted });
}

function kinds(history: OperationRecord[]): string[] {
  return [...new Set(checkLockSafety(history).violations.map((v) => v.kind))].sort();
}

test('a clean hand-off by release, and one by lease expiry, are accepted', () => {
  const byRelease = [
    grant(1, 0, 'a'),
    acquire(1, 10, 20, 'a', 5),
    guarded(1, 30, 40, 5, true),
    release(1, 50, 5),
    grant(2, 0, 'b'),
    acquire(2, 30, 60, 'b', 6),
    guarded(2, 70, 80, 6, true),
    guarded(1, 90, 100, 5, false), // the old holder, late: rejected
  ];
  assert.deepEqual(checkLockSafety(byRelease).violations, []);
  // Holder 1 pauses and never renews: its lease (granted at 0) is valid until at least 1,000.
  // Being granted to holder 2 after that is allowed.
  const byExpiry = [grant(1, 0, 'a'), acquire(1, 10, 20, 'a', 5), grant(2, 0, 'b'), acquire(2, 30, 1_200, 'b', 6)];
  assert.equal(checkLockSafety(byExpiry).verdict, 'ok');
});

test('a second holder granted while the first one was certainly valid is a double owner', () => {
  const history = [
    grant(1, 0, 'a'),
    keepalive(1, 600, 'a'), // valid until at least 1,600
    acquire(1, 10, 20, 'a', 5),
    grant(2, 0, 'b'),
    acquire(2, 30, 1_500, 'b', 6),
  ];
  const report = checkLockSafety(history);
  assert.deepEqual(kinds(history), ['double-owner']);
  assert.match(report.violations[0]!.message, /p2 holds L with token 6 .* while p1 holds L with token 5/);
  // Acknowledged after the renewal's promise ran out: not provably overlapping.
  history[4] = acquire(2, 30, 1_700, 'b', 6);
  assert.equal(checkLockSafety(history).verdict, 'ok');
});

test('shared and non-increasing fencing tokens are rejected', () => {
  const shared = [grant(1, 0, 'a'), acquire(1, 10, 20, 'a', 5), release(1, 30, 5), grant(2, 0, 'b'), acquire(2, 40, 50, 'b', 5)];
  assert.deepEqual(kinds(shared), ['shared-token', 'token-not-increasing']);
  const decreasing = [grant(1, 0, 'a'), acquire(1, 10, 20, 'a', 7), release(1, 30, 7), grant(2, 0, 'b'), acquire(2, 40, 50, 'b', 6)];
  assert.deepEqual(kinds(decreasing), ['token-not-increasing']);
});

test('a lock granted to a lease already seen expired is rejected', () => {
  const history = [grant(1, 0, 'a'), keepalive(1, 2_000, 'a', true), acquire(1, 2_100, 2_110, 'a', 5)];
  assert.deepEqual(kinds(history), ['dead-lease-grant']);
});

test('a stale write accepted by the guard is rejected; concurrent ones are not judged', () => {
  const stale = [guarded(2, 70, 80, 6, true), guarded(1, 90, 100, 5, true)];
  const report = checkLockSafety(stale);
  assert.deepEqual(kinds(stale), ['stale-write-accepted']);
  assert.match(report.violations[0]!.message, /accepted token 5 from p1 .* after accepting token 6/);
  // Overlapping in time, the guard may have seen token 5 first.
  assert.equal(checkLockSafety([guarded(2, 70, 95, 6, true), guarded(1, 90, 100, 5, true)]).verdict, 'ok');
});
