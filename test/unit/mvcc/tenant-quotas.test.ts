// Hard tenant quotas decided at apply (src/mvcc/tenant-usage.ts, issue #28): the usage counters
// follow every put and delete, a write that would pass a limit is refused before any write with
// {tenant, quota, limit, used}, only that tenant is refused, deletes always work, a limit lowered
// below use keeps the data, and racing writers applied in a seeded random order never pass the limit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntryType } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand, encodeTenants } from '../../../src/mvcc/index.js';
import type { ApplyOutcome, Command } from '../../../src/mvcc/index.js';
import { unlimited, type TenantRecord } from '../../../src/base/tenants.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const acme: TenantRecord = { name: 'acme', prefixes: ['/acme/'], limits: { ...unlimited, maxKeys: 3, maxBytes: 12, maxTxnOps: 3 } };
const beta: TenantRecord = { name: 'beta', prefixes: ['/beta/'], limits: unlimited };

function cell(): { store: MvccStore; version: number; apply(op: Command): ApplyOutcome; setTenants(t: TenantRecord[]): void } {
  const store = new MvccStore(new MemoryEngine());
  let index = 0;
  const c = {
    store,
    version: 0,
    apply(op: Command): ApplyOutcome {
      index++;
      const data = encodeCommand({ proposedAtMs: 1_000 + index, source: 1, op }, defaultMvccLimits);
      return store.applyBatch([{ index, term: 1, type: EntryType.normal, data }])[0] as ApplyOutcome;
    },
    setTenants(tenants: TenantRecord[]): void {
      const outcome = c.apply({ type: 'tenantsSet', record: encodeTenants(tenants), ifVersion: c.version });
      assert.equal(outcome.type, 'applied');
      c.version++;
    },
  };
  return c;
}

function refusal(outcome: ApplyOutcome): Record<string, unknown> | null {
  if (outcome.type !== 'failed') return null;
  assert.equal(outcome.error.code, 'quota_exceeded');
  return outcome.error.details;
}

test('exactly at the key limit is applied, one over is refused with its details; another tenant keeps writing', () => {
  const c = cell();
  c.setTenants([acme, beta]);
  for (const k of ['a', 'b', 'c']) assert.equal(c.apply({ type: 'put', key: `/acme/${k}`, value: text('12') }).type, 'applied');
  assert.deepEqual(c.store.tenantUsage('acme'), { keys: 3, bytes: 6, leases: 0 });
  assert.deepEqual(refusal(c.apply({ type: 'put', key: '/acme/d', value: text('1') })), { tenant: 'acme', quota: 'keys', limit: 3, used: 3 });
  assert.throws(() => c.store.range({ type: 'get', key: '/acme/d' }), /not found/, 'the refused put wrote nothing');
  assert.equal(c.apply({ type: 'put', key: '/acme/a', value: text('123') }).type, 'applied', 'overwrite: no new key');
  for (let i = 0; i < 20; i++) assert.equal(c.apply({ type: 'put', key: `/beta/${i}`, value: text('v') }).type, 'applied');
  assert.equal(c.apply({ type: 'put', key: '/other/x', value: text('v') }).type, 'applied', 'no tenant: no quota');
  assert.deepEqual(c.store.tenantUsage('beta'), { keys: 20, bytes: 20, leases: 0 });
});

test('value bytes: exactly at the limit applied, one byte over refused; a txn is refused whole', () => {
  const c = cell();
  c.setTenants([acme]);
  assert.equal(c.apply({ type: 'put', key: '/acme/a', value: new Uint8Array(12) }).type, 'applied');
  assert.deepEqual(refusal(c.apply({ type: 'put', key: '/acme/a', value: new Uint8Array(13) })), { tenant: 'acme', quota: 'bytes', limit: 12, used: 12 });
  assert.equal(c.apply({ type: 'put', key: '/acme/a', value: new Uint8Array(4) }).type, 'applied', 'shrinking is allowed');
  const txn = c.apply({ type: 'txn', compare: [], success: [
    { type: 'put', key: '/acme/b', value: new Uint8Array(4) },
    { type: 'put', key: '/acme/c', value: new Uint8Array(5) },
  ], failure: [] });
  assert.deepEqual(refusal(txn), { tenant: 'acme', quota: 'bytes', limit: 12, used: 4 });
  assert.throws(() => c.store.range({ type: 'get', key: '/acme/b' }), /not found/, 'all or nothing');
  const tooMany = c.apply({ type: 'txn', compare: [], success: [0, 1, 2, 3].map((i) => ({ type: 'put' as const, key: `/acme/t${i}`, value: new Uint8Array(0) })), failure: [] });
  assert.deepEqual(refusal(tooMany), { tenant: 'acme', quota: 'txn_ops', limit: 3, used: 4 });
});

test('a limit lowered below use keeps the data, refuses growth, and deletes still work', () => {
  const c = cell();
  c.setTenants([{ ...acme, limits: unlimited }]);
  for (let i = 0; i < 5; i++) c.apply({ type: 'put', key: `/acme/${i}`, value: text('xx') });
  c.setTenants([{ ...acme, limits: { ...unlimited, maxKeys: 2 } }]);
  assert.deepEqual(c.store.tenantUsage('acme'), { keys: 5, bytes: 10, leases: 0 }, 'recounted, nothing removed');
  assert.equal(c.store.range({ type: 'get', key: '/acme/', prefix: true }).kvs.length, 5);
  assert.deepEqual(refusal(c.apply({ type: 'put', key: '/acme/new', value: text('x') })), { tenant: 'acme', quota: 'keys', limit: 2, used: 5 });
  assert.equal(c.apply({ type: 'delete', key: '/acme/0' }).type, 'applied');
  assert.equal(c.apply({ type: 'delete', key: '/acme/', prefix: true }).type, 'applied');
  assert.deepEqual(c.store.tenantUsage('acme'), { keys: 0, bytes: 0, leases: 0 });
  assert.equal(c.apply({ type: 'put', key: '/acme/new', value: text('x') }).type, 'applied');
});

test('a tenant created over existing keys counts them; a snapshot carries table and usage', () => {
  const c = cell();
  c.apply({ type: 'put', key: '/acme/old', value: text('abc') });
  c.setTenants([acme]);
  assert.deepEqual(c.store.tenantUsage('acme'), { keys: 1, bytes: 3, leases: 0 });
  const replica = new MvccStore(new MemoryEngine());
  replica.restore(c.store.snapshot().chunks);
  assert.deepEqual(replica.tenantUsage('acme'), { keys: 1, bytes: 3, leases: 0 });
});

test('seeded: writers racing to the last unit never pass the limit after apply', () => {
  for (let seed = 1; seed <= 20; seed++) {
    let state = seed;
    const random = (): number => ((state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    const c = cell();
    const limit = 5 + (seed % 7);
    c.setTenants([{ ...acme, limits: { ...unlimited, maxKeys: limit } }]);
    let applied = 0;
    for (let step = 0; step < 60; step++) {
      const writer = Math.floor(random() * 4);
      const op: Command = random() < 0.2
        ? { type: 'delete', key: `/acme/w${writer}/${Math.floor(random() * 10)}` }
        : { type: 'put', key: `/acme/w${writer}/${Math.floor(random() * 10)}`, value: text('v') };
      const outcome = c.apply(op);
      if (outcome.type === 'failed') {
        const details = refusal(outcome);
        assert.deepEqual(Object.keys(details ?? {}).sort(), ['limit', 'quota', 'tenant', 'used']);
      } else if (op.type === 'put') applied++;
      const stored = c.store.range({ type: 'get', key: '/acme/', prefix: true }).kvs.length;
      assert.ok(stored <= limit, `seed ${seed}: ${stored} keys over the limit ${limit}`);
      assert.equal(c.store.tenantUsage('acme').keys, stored, `seed ${seed}: the counter matches the store`);
    }
    assert.ok(applied > 0);
  }
});

test('the in-memory tenant table follows the state: a tenantsSet in the same batch, a failed one, a restore', () => {
  const c = cell();
  // A put first: the store has now read (and kept) the empty table.
  assert.equal(c.apply({ type: 'put', key: '/acme/x', value: text('1') }).type, 'applied');
  const one = { ...acme, limits: { ...acme.limits, maxKeys: 1 } };
  const data = (index: number, op: Command) => ({ index, term: 1, type: EntryType.normal, data: encodeCommand({ proposedAtMs: 2_000 + index, source: 1, op }, defaultMvccLimits) });
  const [set, put] = c.store.applyBatch([
    data(2, { type: 'tenantsSet', record: encodeTenants([one]), ifVersion: 0 }),
    data(3, { type: 'put', key: '/acme/y', value: text('1') }),
  ]) as ApplyOutcome[];
  assert.equal(set?.type, 'applied');
  assert.deepEqual(refusal(put as ApplyOutcome), { tenant: 'acme', quota: 'keys', limit: 1, used: 1 }, 'the next entry of the batch sees the new table');
  // A refused tenantsSet (stale version) leaves the table as it was.
  const [stale] = c.store.applyBatch([data(4, { type: 'tenantsSet', record: encodeTenants([]), ifVersion: 0 })]) as ApplyOutcome[];
  assert.equal(stale?.type, 'failed');
  assert.equal(refusal(c.store.applyBatch([data(5, { type: 'put', key: '/acme/z', value: text('1') })])[0] as ApplyOutcome)?.quota, 'keys');
  // A store that kept its empty table, then restored from one with tenants, enforces them.
  const replica = new MvccStore(new MemoryEngine());
  replica.applyBatch([data(1, { type: 'put', key: '/acme/q', value: text('1') })]);
  replica.restore(c.store.snapshot().chunks);
  const next = replica.appliedIndex + 1;
  assert.equal(refusal(replica.applyBatch([data(next, { type: 'put', key: '/acme/w', value: text('1') })])[0] as ApplyOutcome)?.quota, 'keys');
});

test('maxLeases: a lease counts to each tenant it holds keys in; one more lease is refused, the same lease is not', () => {
  const c = cell();
  c.setTenants([{ ...acme, limits: { ...unlimited, maxLeases: 2 } }, beta]);
  for (const id of [11, 12, 13]) assert.equal(c.apply({ type: 'leaseGrant', ttlMs: 60_000, id }).type, 'applied');
  assert.deepEqual(c.store.tenantUsage('acme'), { keys: 0, bytes: 0, leases: 0 }, 'a grant names no key: no tenant yet');
  assert.equal(c.apply({ type: 'put', key: '/acme/a', value: text('v'), lease: 11 }).type, 'applied');
  assert.equal(c.apply({ type: 'put', key: '/acme/b', value: text('v'), lease: 11 }).type, 'applied', 'the same lease again');
  assert.equal(c.apply({ type: 'put', key: '/acme/c', value: text('v'), lease: 12 }).type, 'applied');
  assert.deepEqual(c.store.tenantUsage('acme'), { keys: 3, bytes: 3, leases: 2 });
  assert.deepEqual(refusal(c.apply({ type: 'put', key: '/acme/d', value: text('v'), lease: 13 })), { tenant: 'acme', quota: 'leases', limit: 2, used: 2 });
  assert.deepEqual(refusal(c.apply({ type: 'seqCreate', prefix: '/acme/locks/x/', value: text(''), lease: 13, ifEmpty: false })),
    { tenant: 'acme', quota: 'leases', limit: 2, used: 2 }, 'a lock contender under the prefix too');
  assert.deepEqual(refusal(c.apply({ type: 'txn', compare: [], success: [
    { type: 'put', key: '/acme/e', value: text('v'), lease: 13 }, { type: 'put', key: '/acme/f', value: text('v'), lease: 13 },
  ], failure: [] })), { tenant: 'acme', quota: 'leases', limit: 2, used: 2 });
  assert.equal(c.apply({ type: 'put', key: '/beta/x', value: text('v'), lease: 13 }).type, 'applied', 'another tenant is not refused');
  // Detaching the last key of lease 12 frees its place; revoking lease 11 deletes its keys and frees another.
  assert.equal(c.apply({ type: 'put', key: '/acme/c', value: text('v') }).type, 'applied');
  assert.equal(c.store.tenantUsage('acme').leases, 1);
  assert.equal(c.apply({ type: 'put', key: '/acme/d', value: text('v'), lease: 13 }).type, 'applied');
  assert.equal(c.apply({ type: 'leaseRevoke', id: 11 }).type, 'applied');
  assert.deepEqual(c.store.tenantUsage('acme'), { keys: 2, bytes: 2, leases: 1 });
  assert.equal(c.apply({ type: 'delete', key: '/acme/d' }).type, 'applied');
  assert.deepEqual(c.store.tenantUsage('acme'), { keys: 1, bytes: 1, leases: 0 });
});

test('lease use is recounted from the keys when the table changes, and matches the running count', () => {
  const c = cell();
  for (const id of [21, 22, 23]) c.apply({ type: 'leaseGrant', ttlMs: 60_000, id });
  c.apply({ type: 'put', key: '/acme/a', value: text('v'), lease: 21 });
  c.apply({ type: 'put', key: '/acme/b', value: text('v'), lease: 22 });
  c.apply({ type: 'put', key: '/acme/c', value: text('v'), lease: 22 });
  c.apply({ type: 'put', key: '/beta/a', value: text('v'), lease: 22 });
  c.setTenants([acme, beta]);
  assert.equal(c.store.tenantUsage('acme').leases, 2, 'a tenant created over leased keys counts their leases');
  assert.equal(c.store.tenantUsage('beta').leases, 1, 'one lease may count to two tenants');
  // Running counts, then a recount (a table change) must agree.
  c.apply({ type: 'put', key: '/acme/b', value: text('v'), lease: 23 });
  c.apply({ type: 'delete', key: '/acme/a' });
  const running = c.store.tenantUsage('acme');
  c.setTenants([{ ...acme, limits: { ...acme.limits, maxKeys: 100 } }, beta]);
  assert.deepEqual(c.store.tenantUsage('acme'), running);
  assert.equal(running.leases, 2);
  c.setTenants([beta]);
  c.apply({ type: 'leaseRevoke', id: 22 });
  assert.deepEqual(c.store.tenantUsage('beta'), { keys: 0, bytes: 0, leases: 0 });
});
