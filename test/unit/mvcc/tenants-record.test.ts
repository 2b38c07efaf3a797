// The tenant table as replicated state (src/mvcc/tenants-record.ts, issue #28): tenantsSet
// round-trips through the entry codec, applies in version order (a stale change fails and changes
// nothing), refuses at apply a table whose prefixes overlap (every member the same), leaves the
// key space's revision alone, and survives a snapshot into another store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryEngine, MvccStore, decodeCommand, defaultMvccLimits, encodeCommand, encodeTenants } from '../../../src/mvcc/index.js';
import type { Command } from '../../../src/mvcc/index.js';
import { unlimited, type TenantRecord } from '../../../src/base/tenants.js';
import { batchCell } from './store-cells.js';

const acme: TenantRecord = { name: 'acme', prefixes: ['/acme/'], limits: { ...unlimited, maxKeys: 100 } };
const beta: TenantRecord = { name: 'beta', prefixes: ['/beta/'], limits: { ...unlimited, writesPerSecond: 50 } };

test('tenantsSet round-trips through the entry codec', () => {
  const op: Command = { type: 'tenantsSet', record: encodeTenants([acme]), ifVersion: 7 };
  const decoded = decodeCommand(encodeCommand({ proposedAtMs: 5, op }, defaultMvccLimits), defaultMvccLimits);
  assert.equal(decoded.op.type, 'tenantsSet');
  assert.equal(decoded.op.type === 'tenantsSet' ? decoded.op.ifVersion : 0, 7);
});

test('tenant changes apply in version order; a stale one fails; the revision stays', () => {
  const { store, applyOne } = batchCell();
  assert.deepEqual(store.tenantsRecord(), { version: 0, tenants: [] });
  applyOne({ type: 'put', key: '/k', value: new Uint8Array([1]) });
  const revision = store.revision;
  const first = applyOne({ type: 'tenantsSet', record: encodeTenants([acme]), ifVersion: 0 });
  assert.deepEqual(first.type === 'applied' ? first.result : first, { type: 'tenantsSet', version: 1, revision });
  const stale = applyOne({ type: 'tenantsSet', record: encodeTenants([beta]), ifVersion: 0 });
  assert.equal(stale.type === 'failed' ? stale.error.code : '', 'precondition_failed');
  applyOne({ type: 'tenantsSet', record: encodeTenants([acme, beta]), ifVersion: 1 });
  assert.deepEqual(store.tenantsRecord(), { version: 2, tenants: [acme, beta] });
  assert.equal(store.revision, revision, 'a tenant change is not a key-space revision');
});

test('a table with overlapping prefixes or a bad record is refused at apply and changes nothing', () => {
  const { store, applyOne } = batchCell();
  applyOne({ type: 'tenantsSet', record: encodeTenants([acme]), ifVersion: 0 });
  const overlap = applyOne({ type: 'tenantsSet', record: encodeTenants([acme, { ...beta, prefixes: ['/acme/eu/'] }]), ifVersion: 1 });
  assert.equal(overlap.type, 'failed');
  assert.equal(overlap.type === 'failed' ? overlap.error.code : '', 'invalid_argument');
  assert.match(overlap.type === 'failed' ? overlap.error.message : '', /overlaps prefix \/acme\/ of tenant acme/);
  const garbage = applyOne({ type: 'tenantsSet', record: new TextEncoder().encode('{"tenants": 3}'), ifVersion: 1 });
  assert.equal(garbage.type === 'failed' ? garbage.error.code : '', 'invalid_argument');
  assert.deepEqual(store.tenantsRecord(), { version: 1, tenants: [acme] });
});

test('a snapshot carries the tenant table to another store', () => {
  const { store, applyOne } = batchCell();
  applyOne({ type: 'tenantsSet', record: encodeTenants([acme, beta]), ifVersion: 0 });
  const replica = new MvccStore(new MemoryEngine());
  replica.restore(store.snapshot().chunks);
  assert.deepEqual(replica.tenantsRecord(), { version: 1, tenants: [acme, beta] });
});

test('limits added later (maxWatchBytes, eventsPerSecond) round-trip; an invalid value reads as unlimited at apply, like an older member that skips them', () => {
  const { store, applyOne } = batchCell();
  const watched: TenantRecord = { name: 'w', prefixes: ['/w/'], limits: { ...unlimited, maxWatchBytes: 65_536, eventsPerSecond: 100 } };
  const first = applyOne({ type: 'tenantsSet', record: encodeTenants([watched]), ifVersion: 0 });
  assert.equal(first.type, 'applied');
  assert.deepEqual(store.tenantsRecord().tenants[0]?.limits, watched.limits);
  // A table written by an older build lacks them: unlimited, still valid.
  const older = new TextEncoder().encode(JSON.stringify({ tenants: [{ name: 'w', prefixes: ['/w/'], limits: { maxKeys: 5 } }] }));
  assert.equal(applyOne({ type: 'tenantsSet', record: older, ifVersion: 1 }).type, 'applied');
  assert.equal(store.tenantsRecord().tenants[0]?.limits.maxWatchBytes, null);
  assert.equal(store.tenantsRecord().tenants[0]?.limits.eventsPerSecond, null);
  // An older member would accept this table (it never reads these fields): so must this one.
  const odd = new TextEncoder().encode(JSON.stringify({ tenants: [{ name: 'w', prefixes: ['/w/'], limits: { maxWatchBytes: -3, eventsPerSecond: 'fast' } }] }));
  const outcome = applyOne({ type: 'tenantsSet', record: odd, ifVersion: 2 });
  assert.equal(outcome.type, 'applied', JSON.stringify(outcome));
  assert.equal(store.tenantsRecord().version, 3);
  assert.equal(store.tenantsRecord().tenants[0]?.limits.maxWatchBytes, null);
  assert.equal(store.tenantsRecord().tenants[0]?.limits.eventsPerSecond, null);
  // An older limit keeps refusing a bad value at apply, as before.
  const bad = new TextEncoder().encode(JSON.stringify({ tenants: [{ name: 'w', prefixes: ['/w/'], limits: { maxWatches: -1 } }] }));
  assert.equal(applyOne({ type: 'tenantsSet', record: bad, ifVersion: 3 }).type, 'failed');
});
