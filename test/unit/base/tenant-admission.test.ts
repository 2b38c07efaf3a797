// A node's tenant admission (src/base/tenant-admission.ts) on an injected clock: a tenant over
// its rate or its concurrent requests is refused with {tenant, quota, limit, used} and a jittered
// Retry-After while another tenant and keys of no tenant pass; a refusal takes nothing; refusals
// are counted per tenant and quota. (Watch quotas: test/unit/watch/tenant-quotas.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TenantAdmission } from '../../../src/base/tenant-admission.js';
import { QuotaExceededError } from '../../../src/base/errors.js';
import { quotaError, unlimited, type TenantRecord } from '../../../src/base/tenants.js';
import { refusal } from './quota-refusal.js';

const a: TenantRecord = { name: 'a', prefixes: ['/a/'], limits: { ...unlimited, writesPerSecond: 5, readsPerSecond: 2, maxConcurrentRequests: 3, maxWatches: 2 } };
const b: TenantRecord = { name: 'b', prefixes: ['/b/'], limits: { ...unlimited, writesPerSecond: 1000 } };

function setup(table: TenantRecord[] = [a, b]): { admission: TenantAdmission; clock: { ms: number }; table: { now: TenantRecord[] } } {
  const clock = { ms: 1_000 };
  const current = { now: table };
  const admission = new TenantAdmission({ tenants: () => current.now, nowMs: () => clock.ms, random: () => 0.5 });
  return { admission, clock, table: current };
}

test('a tenant over its write rate is refused with details and Retry-After; the other tenant and untenanted keys pass', () => {
  const { admission, clock } = setup();
  for (let i = 0; i < 5; i++) admission.admit(['/a/k'], 'write')();
  const error = refusal(() => admission.admit(['/a/k'], 'write'));
  assert.deepEqual(error.details, { tenant: 'a', quota: 'writes_per_second', limit: 5, used: 5 });
  // Refilling one token at 5/s takes 200 ms: base 1 s, plus 0 or 1 s of jitter (random 0.5 -> 2).
  assert.equal(error.retryAfterSeconds, 2);
  for (let i = 0; i < 100; i++) admission.admit(['/b/k'], 'write')();
  for (let i = 0; i < 100; i++) admission.admit(['/nobody/k'], 'write')();
  // Reads have their own bucket.
  admission.admit(['/a/k'], 'read')();
  clock.ms += 200;
  admission.admit(['/a/k'], 'write')();
  refusal(() => admission.admit(['/a/k'], 'write'));
  assert.deepEqual(admission.rejections(), [{ tenant: 'a', quota: 'writes_per_second', count: 2 }]);
});

test('precheck refuses exactly when admit would, and takes nothing', () => {
  const { admission } = setup();
  for (let i = 0; i < 10; i++) admission.precheck('/a/k', 'read');
  admission.admit(['/a/k'], 'read')();
  admission.admit(['/a/k'], 'read')();
  const error = refusal(() => admission.precheck('/a/k', 'read'));
  assert.equal(error.details['quota'], 'reads_per_second');
});

test('a txn over two tenants takes from both or from neither', () => {
  const { admission } = setup();
  for (let i = 0; i < 5; i++) admission.admit(['/a/x'], 'write')();
  const before = admission.ratePerSecond('b', 'write');
  refusal(() => admission.admit(['/b/y', '/a/x'], 'write'));
  assert.equal(admission.ratePerSecond('b', 'write'), before);
  assert.equal(admission.inFlight('b'), 0, 'b holds no slot for the refused txn');
});

test('concurrent requests: the slot is held until released, released once', () => {
  const { admission } = setup([{ ...a, limits: { ...a.limits, writesPerSecond: null } }]);
  const releases = [admission.admit(['/a/1'], 'write'), admission.admit(['/a/2'], 'write'), admission.admit(['/a/3'], 'write')];
  const error = refusal(() => admission.admit(['/a/4'], 'write'));
  assert.deepEqual(error.details, { tenant: 'a', quota: 'concurrent_requests', limit: 3, used: 3 });
  releases[0]?.();
  releases[0]?.();
  assert.equal(admission.inFlight('a'), 2, 'a second release of the same request gives nothing back');
  admission.admit(['/a/4'], 'write');
  refusal(() => admission.admit(['/a/5'], 'write'));
});

test('hard quota refusals answered here are counted; other errors are not', () => {
  const { admission } = setup();
  admission.countRefusal(quotaError('a', 'keys', 3, 3));
  admission.countRefusal(new Error('not a quota'));
  admission.countRefusal(new QuotaExceededError('node watch limit', { limit: 10 }));
  assert.deepEqual(admission.rejections(), [{ tenant: 'a', quota: 'keys', count: 1 }]);
});

test('a limit changed in the table applies at once; a deleted tenant is no longer admitted against', () => {
  const { admission, table } = setup();
  for (let i = 0; i < 5; i++) admission.admit(['/a/k'], 'write')();
  refusal(() => admission.admit(['/a/k'], 'write'));
  table.now = [b];
  for (let i = 0; i < 50; i++) admission.admit(['/a/k'], 'write')();
  table.now = [{ ...a, limits: { ...a.limits, writesPerSecond: null } }, b];
  for (let i = 0; i < 50; i++) admission.admit(['/a/k'], 'write')();
});
