// Tenants' pure rules (src/base/tenants.ts, tenant-buckets.ts): a record's validation, prefixes
// of two tenants never overlap, a key's tenant, and the quota arithmetic the state machine runs
// at apply (growth past a limit refused with {tenant, quota, limit, used}; shrinking always allowed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  addUsage, quotaRefusal, retryAfterSeconds, tenantConflict, tenantOfKey, tenantProblem, txnOpsRefusal, unlimited,
  zeroUsage, type TenantRecord,
} from '../../../src/base/tenants.js';
import { TenantBuckets } from '../../../src/base/tenant-buckets.js';
import { errorTable } from '../../../src/base/errors.js';

const acme: TenantRecord = { name: 'acme', prefixes: ['/acme/'], limits: { ...unlimited, maxKeys: 3, maxBytes: 10, maxLeases: 1, maxTxnOps: 4 } };
const beta: TenantRecord = { name: 'beta', prefixes: ['/beta/', '/shared/beta/'], limits: unlimited };

test('a tenant record is validated: name, at least one namespace prefix, not the root, limits >= 0', () => {
  assert.equal(tenantProblem(acme), null);
  assert.match(tenantProblem({ ...acme, name: 'Bad Name' }) ?? '', /tenant name/);
  assert.match(tenantProblem({ ...acme, prefixes: [] }) ?? '', /at least one prefix/);
  assert.match(tenantProblem({ ...acme, prefixes: ['/'] }) ?? '', /root/);
  assert.match(tenantProblem({ ...acme, prefixes: ['/acme'] }) ?? '', /end with/);
  assert.match(tenantProblem({ ...acme, prefixes: ['/acme/', '/acme/x/'] }) ?? '', /overlap/);
  assert.match(tenantProblem({ ...acme, limits: { ...acme.limits, maxKeys: -1 } }) ?? '', /maxKeys/);
  assert.match(tenantProblem({ ...acme, limits: { ...acme.limits, maxBytes: 1.5 } }) ?? '', /maxBytes/);
});

test('prefixes of two tenants never overlap; a tenant may replace its own record', () => {
  assert.equal(tenantConflict([acme], beta), null);
  assert.match(tenantConflict([acme, beta], { ...beta, name: 'gamma', prefixes: ['/acme/eu/'] }) ?? '', /overlaps prefix \/acme\/ of tenant acme/);
  assert.match(tenantConflict([acme, beta], { ...beta, name: 'gamma', prefixes: ['/shared/'] }) ?? '', /tenant beta/);
  assert.equal(tenantConflict([acme, beta], { ...acme, prefixes: ['/acme/', '/acme2/'] }), null, 'own record replaced');
  assert.equal(tenantConflict([acme], { ...beta, prefixes: ['/acmex/'] }), null, '/acmex/ does not start with /acme/');
});

test('a key belongs to the tenant owning the longest prefix that starts it, else no tenant', () => {
  assert.equal(tenantOfKey([acme, beta], '/acme/k')?.name, 'acme');
  assert.equal(tenantOfKey([acme, beta], '/shared/beta/x')?.name, 'beta');
  assert.equal(tenantOfKey([acme, beta], '/shared/other'), null);
  assert.equal(tenantOfKey([acme, beta], '/acme'), null, 'the prefix without its slash is not owned');
});

test('exactly at the limit is allowed; one over is refused with tenant, quota, limit and used', () => {
  assert.equal(quotaRefusal(acme, { keys: 2, bytes: 0, leases: 0 }, { keys: 1, bytes: 0, leases: 0 }), null);
  const over = quotaRefusal(acme, { keys: 3, bytes: 0, leases: 0 }, { keys: 1, bytes: 0, leases: 0 });
  assert.ok(over !== null);
  assert.equal(over.code, 'quota_exceeded');
  assert.deepEqual(over.details, { tenant: 'acme', quota: 'keys', limit: 3, used: 3 });
  assert.equal(errorTable.quota_exceeded.http, 429);
  assert.equal(errorTable.quota_exceeded.grpc, 8);
  assert.deepEqual(quotaRefusal(acme, { keys: 0, bytes: 6, leases: 0 }, { keys: 1, bytes: 5, leases: 0 })?.details,
    { tenant: 'acme', quota: 'bytes', limit: 10, used: 6 });
  assert.equal(quotaRefusal(acme, { keys: 0, bytes: 5, leases: 0 }, { keys: 1, bytes: 5, leases: 0 }), null);
  assert.deepEqual(quotaRefusal(acme, { keys: 0, bytes: 0, leases: 1 }, { keys: 0, bytes: 0, leases: 1 })?.details,
    { tenant: 'acme', quota: 'leases', limit: 1, used: 1 });
  assert.equal(quotaRefusal(beta, { keys: 1e9, bytes: 1e12, leases: 1e6 }, { keys: 1, bytes: 1, leases: 1 }), null, 'unlimited');
});

test('a limit lowered below use keeps data: shrinking is allowed, growth refused', () => {
  const lowered: TenantRecord = { ...acme, limits: { ...acme.limits, maxKeys: 1, maxBytes: 2 } };
  const usage = { keys: 3, bytes: 9, leases: 0 };
  assert.equal(quotaRefusal(lowered, usage, { keys: -1, bytes: -3, leases: 0 }), null, 'a delete');
  assert.equal(quotaRefusal(lowered, usage, { keys: 0, bytes: -1, leases: 0 }), null, 'an overwrite with a smaller value');
  assert.equal(quotaRefusal(lowered, usage, { keys: 0, bytes: 1, leases: 0 })?.details.quota, 'bytes', 'a larger value');
  assert.deepEqual(addUsage(usage, { keys: -1, bytes: -3, leases: 0 }), { keys: 2, bytes: 6, leases: 0 });
  assert.throws(() => addUsage(zeroUsage, { keys: -1, bytes: 0, leases: 0 }), /below zero/);
});

test('racing writers applied one after another never exceed the limit', () => {
  let usage = zeroUsage;
  let admitted = 0;
  let refused = 0;
  for (let writer = 0; writer < 50; writer++) {
    const delta = { keys: 1, bytes: 2, leases: 0 };
    const refusal = quotaRefusal(acme, usage, delta);
    if (refusal === null) {
      usage = addUsage(usage, delta);
      admitted++;
    } else {
      refused++;
      assert.ok(refusal.details.used as number + 1 > (refusal.details.limit as number));
    }
  }
  assert.equal(admitted, 3);
  assert.equal(refused, 47);
  assert.ok(usage.keys <= 3 && usage.bytes <= 10);
});

test('a transaction over the tenant txn-ops limit is refused', () => {
  assert.equal(txnOpsRefusal(acme, 4), null);
  assert.deepEqual(txnOpsRefusal(acme, 5)?.details, { tenant: 'acme', quota: 'txn_ops', limit: 4, used: 5 });
  assert.equal(txnOpsRefusal(beta, 10_000), null);
});

test('Retry-After has jitter between base and twice base, at least 1 s', () => {
  assert.equal(retryAfterSeconds(2, () => 0), 2);
  assert.equal(retryAfterSeconds(2, () => 0.99), 4);
  assert.equal(retryAfterSeconds(0, () => 0.4), 1, 'at least 1 s');
  assert.deepEqual([0, 0.49, 0.5, 0.99].map((r) => retryAfterSeconds(1, () => r)), [1, 1, 2, 2], 'a base of 1 s still spreads over 1 and 2 s');
});

test('admission buckets: the rate per second is admitted, the next refused, refilled with time, per tenant', () => {
  const limited: TenantRecord = { ...acme, limits: { ...acme.limits, writesPerSecond: 5 } };
  const buckets = new TenantBuckets();
  for (let i = 0; i < 5; i++) assert.equal(buckets.take(limited, 'writes_per_second', 1000), null);
  const refused = buckets.take(limited, 'writes_per_second', 1000);
  assert.deepEqual(refused?.details, { tenant: 'acme', quota: 'writes_per_second', limit: 5, used: 5 });
  assert.equal(buckets.take(beta, 'writes_per_second', 1000), null, 'another tenant is not affected');
  assert.equal(buckets.take(limited, 'reads_per_second', 1000), null, 'reads unlimited');
  assert.ok(buckets.take(limited, 'writes_per_second', 1100) !== null, '0.1 s refills half a token');
  assert.equal(buckets.take(limited, 'writes_per_second', 1200), null, '0.2 s refills one');
  // Over 10 s at most rate * 10 + burst are admitted.
  let admitted = 0;
  for (let t = 2000; t < 12_000; t += 10) if (buckets.take(limited, 'writes_per_second', t) === null) admitted++;
  assert.ok(admitted >= 49 && admitted <= 55, `admitted ${admitted}`);
});
