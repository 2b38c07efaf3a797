// The lease checker on hand-made histories: a renewed lease whose key vanished, a dead lease whose
// key survived, a dead lease renewed or written under are each rejected with their kind; a clean
// life (renewed, read, abandoned, expired, read absent) and reads whose timing proves nothing are
// accepted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkLeases, type OperationRecord } from '../../../src/check/index.js';
import { leaseBuilders, record } from './builders.js';

const { grant, keepalive } = leaseBuilders(5_000);

function put(p: number, at: number, key: string, value: string, leaseId: string, status: 'ok' | 'info' = 'ok') {
  return record(p, at, at + 5, { type: 'lease-put', key, value, leaseId }, { type: 'lease-put' }, status);
}
function readAt(p: number, from: number, to: number, key: string, value: string | null): OperationRecord {
  return record(p, from, to, { type: 'lease-read', key }, { type: 'lease-read', value });
}

function kinds(history: OperationRecord[]): string[] {
  return [...new Set(checkLeases(history).violations.map((v) => v.kind))].sort();
}

const life = (): OperationRecord[] => [
  grant(1, 0, 'L'),
  put(1, 10, '/k', 'v', 'L'),
  readAt(1, 20, 30, '/k', 'v'),
  keepalive(1, 3_000, 'L'), // alive until at least 8,000
  readAt(1, 7_000, 7_010, '/k', 'v'),
  // abandoned: no more renewals; expired somewhere after 8,000
  keepalive(1, 14_000, 'L', true), // certainly dead by 14,005
  readAt(1, 14_100, 14_110, '/k', null),
];

test('a lease renewed, read, abandoned and expired with its key is accepted', () => {
  const report = checkLeases(life());
  assert.deepEqual(report.violations, []);
  assert.equal(report.verdict, 'ok');
  assert.equal(report.readsChecked, 3);
});

test('reads whose timing proves nothing are accepted whatever they see', () => {
  const history = [
    ...life(),
    readAt(2, 5, 15, '/k', null), // began before the put was acknowledged
    readAt(2, 9_000, 9_010, '/k', null), // after the certain validity, before the certain death
    readAt(2, 12_000, 12_010, '/k', 'v'), // same window: a late expiry is allowed
    put(3, 0, '/unknown', 'u', 'M', 'info'), // unknown outcome, lease never seen
    readAt(3, 100, 110, '/unknown', null),
  ];
  assert.equal(checkLeases(history).verdict, 'ok');
});

test("a renewed lease's key that vanished is a violation", () => {
  const history = [...life(), readAt(2, 7_500, 7_600, '/k', null)];
  assert.deepEqual(kinds(history), ['live-key-vanished']);
});

test("an expired lease's key still readable after the lease was seen dead is a violation", () => {
  const history = [...life(), readAt(2, 14_200, 14_210, '/k', 'v')];
  assert.deepEqual(kinds(history), ['dead-lease-key-survived']);
  // A key written by a put of unknown outcome must be gone too once its lease is dead.
  const unknown = [
    grant(1, 0, 'L'),
    put(1, 10, '/u', 'x', 'L', 'info'),
    keepalive(2, 9_000, 'L', true),
    readAt(2, 9_100, 9_110, '/u', 'x'),
  ];
  assert.deepEqual(kinds(unknown), ['dead-lease-key-survived']);
});

test('a dead lease renewed, or written under, is a violation', () => {
  // The bogus renewal also promised the lease (so the key) until 19,300: a lease cannot come
  // back, so the absent read at 14,100 contradicts it as well.
  assert.deepEqual(kinds([...life(), keepalive(2, 14_300, 'L')]), ['dead-lease-renewed', 'live-key-vanished']);
  assert.deepEqual(kinds([...life(), put(2, 14_300, '/k2', 'w', 'L')]), ['put-on-dead-lease']);
});

test('a revoke that may have happened ends the certain life early', () => {
  const revoke = record(1, 1_000, 1_005, { type: 'lease-revoke', leaseId: 'L' } as const, null, 'info');
  const history = [grant(1, 0, 'L'), put(1, 10, '/k', 'v', 'L'), revoke, readAt(2, 2_000, 2_010, '/k', null)];
  assert.equal(checkLeases(history).verdict, 'ok');
});
