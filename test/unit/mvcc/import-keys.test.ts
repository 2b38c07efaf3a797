// The move's import command (src/mvcc/import-keys.ts, log command 16) on a destination cell: keys
// land with their source version and revisions, the cell's revision is raised to the floor so the
// next write (and fencing token) is above it, the leases they name are recreated with their
// remaining TTL, and nothing is imported into a namespace the cell owns (a late import after the
// flip changes nothing). Older versions refuse code 16 as malformed (decoding fails).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultMvccLimits, encodeCommand, decodeCommand, encodeTenants } from '../../../src/mvcc/index.js';
import { unlimited } from '../../../src/base/tenants.js';
import type { Command } from '../../../src/mvcc/index.js';
import { encodeImportRecord } from '../../../src/mvcc/import-keys.js';
import { batchCell, codeOf } from './store-cells.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

function table(epoch: number, payOwner: string): Command {
  return {
    type: 'ownershipSet',
    record: text(JSON.stringify({
      epoch, cell: 'cell-2',
      namespaces: [{ prefix: '/', cell: 'cell-2', epoch }, { prefix: '/pay/', cell: payOwner, epoch }],
      cells: [{ id: 'cell-1', endpoints: ['http://a:1'] }, { id: 'cell-2', endpoints: ['http://b:1'] }],
    })),
  };
}

const importOf = (record: Parameters<typeof encodeImportRecord>[0]): Command => ({ type: 'importKeys', record: encodeImportRecord(record) });
const kv = (key: string, value: string, createRevision: number, modRevision: number, version: number, lease = 0) =>
  ({ key, value: text(value), createRevision, modRevision, version, lease });

test('imported keys keep their source revisions; the floor raises the revision; the next write is above it', () => {
  const { store, apply } = batchCell();
  apply(table(2, 'cell-1'));
  const [imported] = apply(importOf({
    prefix: '/pay/', clear: true, floor: 500,
    puts: [kv('/pay/a', 'A', 120, 480, 7), kv('/pay/lock', 'L', 490, 490, 1, 77)],
    deletes: [], leases: [{ id: 77, ttlMs: 30_000, remainingMs: 12_000 }],
  }));
  assert.equal(codeOf(imported), 'applied');
  assert.equal(store.revision, 500);
  const a = store.range({ type: 'get', key: '/pay/a' }).kvs[0];
  assert.deepEqual({ c: a?.createRevision, m: a?.modRevision, v: a?.version }, { c: 120, m: 480, v: 7 });
  const lease = store.lease(77);
  assert.deepEqual({ ttl: lease?.ttlMs, remaining: lease?.remainingMs }, { ttl: 30_000, remaining: 12_000 });
  assert.deepEqual(store.keysOfLease(77), ['/pay/lock']);
  // Owned now (the flip's table): a write gets a revision above the floor, and keeps the history.
  const [flipped, write] = apply(table(3, 'cell-2'), { type: 'put', key: '/pay/a', value: text('A2') });
  assert.equal(codeOf(flipped), 'applied');
  assert.equal(codeOf(write), 'applied');
  const after = store.range({ type: 'get', key: '/pay/a' }).kvs[0];
  assert.ok((after?.modRevision ?? 0) > 500);
  assert.equal(after?.createRevision, 120);
  assert.equal(after?.version, 8);
  // A new key (a new lock entry: its fencing token) is above every source revision.
  apply({ type: 'put', key: '/pay/new', value: text('n') });
  assert.ok((store.range({ type: 'get', key: '/pay/new' }).kvs[0]?.createRevision ?? 0) > 500);
  // A late import (a deposed mover) into a namespace the cell owns changes nothing.
  const [late] = apply(importOf({ prefix: '/pay/', clear: true, floor: 0, puts: [], deletes: [], leases: [] }));
  assert.equal(codeOf(late), 'precondition_failed');
  assert.equal(store.range({ type: 'get', key: '/pay/a' }).kvs[0]?.value.length, 2);
});

test('a catch-up import applies puts and deletes; a release clears the range only', () => {
  const { store, apply } = batchCell();
  apply(table(2, 'cell-1'), { type: 'put', key: '/other', value: text('o') });
  apply(importOf({ prefix: '/pay/', clear: true, floor: 10, puts: [kv('/pay/a', 'A', 3, 3, 1), kv('/pay/b', 'B', 4, 4, 1)], deletes: [], leases: [] }));
  apply(importOf({ prefix: '/pay/', clear: false, floor: 12, puts: [kv('/pay/a', 'A2', 3, 11, 2)], deletes: ['/pay/b'], leases: [] }));
  assert.deepEqual(store.range({ type: 'get', key: '/pay/', prefix: true }).kvs.map((k) => [k.key, k.modRevision]), [['/pay/a', 11]]);
  assert.equal(store.revision, 12);
  apply(importOf({ prefix: '/pay/', clear: true, floor: 0, puts: [], deletes: [], leases: [] }));
  assert.equal(store.range({ type: 'get', key: '/pay/', prefix: true }).count, 0);
  assert.equal(store.range({ type: 'get', key: '/other' }).count, 1);
  assert.equal(store.revision, 12, 'a release moves no revision');
});

test('an import that names keys outside its namespace, or into a cell without a table, is refused and changes nothing', () => {
  const { store, apply } = batchCell();
  const [noTable] = apply(importOf({ prefix: '/pay/', clear: false, floor: 5, puts: [kv('/pay/a', 'A', 1, 1, 1)], deletes: [], leases: [] }));
  assert.equal(codeOf(noTable), 'precondition_failed');
  apply(table(2, 'cell-1'));
  const [outside] = apply(importOf({ prefix: '/pay/', clear: false, floor: 5, puts: [kv('/other', 'X', 1, 1, 1)], deletes: [], leases: [] }));
  assert.equal(codeOf(outside), 'invalid_argument');
  const [noLease] = apply(importOf({ prefix: '/pay/', clear: false, floor: 5, puts: [kv('/pay/a', 'A', 1, 1, 1, 9)], deletes: [], leases: [] }));
  assert.equal(codeOf(noLease), 'precondition_failed');
  assert.equal(store.range({ type: 'get', key: '/', prefix: true }).count, 0);
  assert.equal(store.revision, 0);
});

test('the command round-trips through the log codec as code 16', () => {
  const op = importOf({ prefix: '/pay/', clear: true, floor: 3, puts: [], deletes: [], leases: [] });
  const bytes = encodeCommand({ proposedAtMs: 1, source: 1, op }, defaultMvccLimits);
  assert.deepEqual(decodeCommand(bytes, defaultMvccLimits).op, op);
});

test('an import made at an older map epoch than the cell holds is refused (a deposed mover)', () => {
  const { store, apply } = batchCell();
  apply(table(5, 'cell-1'));
  const [stale] = apply(importOf({ prefix: '/pay/', clear: true, floor: 9, epoch: 4, puts: [kv('/pay/a', 'old', 1, 1, 1)], deletes: [], leases: [] }));
  assert.equal(codeOf(stale), 'precondition_failed');
  assert.equal(store.revision, 0);
  const [current] = apply(importOf({ prefix: '/pay/', clear: true, floor: 9, epoch: 5, puts: [kv('/pay/a', 'new', 1, 8, 2)], deletes: [], leases: [] }));
  assert.equal(codeOf(current), 'applied');
  assert.equal(store.revision, 9);
});

test('imported keys count to their tenant (#28): later deletes and revocations keep the counts exact instead of stopping the node', () => {
  const { store, apply } = batchCell();
  const tenants = { type: 'tenantsSet', ifVersion: 0, record: encodeTenants([{ name: 'pay', prefixes: ['/pay/'], limits: { ...unlimited, maxLeases: 5 } }]) } as const;
  const [set] = apply(table(2, 'cell-1'), tenants);
  assert.equal(codeOf(set), 'applied');
  const [imported] = apply(importOf({
    prefix: '/pay/', clear: true, floor: 500,
    puts: [kv('/pay/a', 'AA', 120, 480, 7), kv('/pay/lock', 'L', 490, 490, 1, 77)],
    deletes: [], leases: [{ id: 77, ttlMs: 30_000, remainingMs: 12_000 }],
  }));
  assert.equal(codeOf(imported), 'applied');
  assert.deepEqual(store.tenantUsage('pay'), { keys: 2, bytes: 3, leases: 1 });
  // A catch-up import replacing /pay/a with a longer value and deleting nothing else.
  apply(importOf({ prefix: '/pay/', clear: false, floor: 0, puts: [kv('/pay/a', 'AAAA', 120, 495, 8)], deletes: [], leases: [] }));
  assert.deepEqual(store.tenantUsage('pay'), { keys: 2, bytes: 5, leases: 1 });
  const [flipped, deleted, revoked] = apply(table(3, 'cell-2'), { type: 'delete', key: '/pay/a' }, { type: 'leaseRevoke', id: 77 });
  assert.deepEqual([codeOf(flipped), codeOf(deleted), codeOf(revoked)], ['applied', 'applied', 'applied']);
  assert.deepEqual(store.tenantUsage('pay'), { keys: 0, bytes: 0, leases: 0 });
});

test('leases across a move: a re-import only raises a lease; an import of leases alone is taken after the landing and raises only leases held', () => {
  const { store, apply } = batchCell();
  apply(table(2, 'cell-1'));
  const lease = { id: 77, ttlMs: 10_000 };
  apply(importOf({ prefix: '/pay/', clear: true, floor: 5, puts: [kv('/pay/s', 'S', 4, 4, 1, 77)], deletes: [], leases: [{ ...lease, remainingMs: 6_000 }] }));
  assert.equal(store.lease(77)?.remainingMs, 6_000);
  // A later import read less time left (nobody renewed on the source since): the checkpoint stays.
  apply(importOf({ prefix: '/pay/', clear: false, floor: 6, puts: [kv('/pay/s', 'S2', 4, 6, 2, 77)], deletes: [], leases: [{ ...lease, remainingMs: 2_000 }] }));
  assert.equal(store.lease(77)?.remainingMs, 6_000, 'an import never cuts a lease short');
  // Owned now: keys are refused, leases alone are taken (renewals carried from the source).
  apply(table(3, 'cell-2'));
  const [raised] = apply(importOf({ prefix: '/pay/', clear: false, floor: 0, puts: [], deletes: [], leases: [{ ...lease, remainingMs: 9_000 }] }));
  assert.equal(codeOf(raised), 'applied');
  assert.equal(store.lease(77)?.remainingMs, 9_000);
  const [keys] = apply(importOf({ prefix: '/pay/', clear: false, floor: 0, puts: [kv('/pay/t', 'T', 7, 7, 1, 77)], deletes: [], leases: [{ ...lease, remainingMs: 9_000 }] }));
  assert.equal(codeOf(keys), 'precondition_failed', 'keys are still refused once owned');
  // A lease this cell does not hold (ended here), or holds with another TTL, is not recreated or touched.
  const [absent] = apply(importOf({ prefix: '/pay/', clear: false, floor: 0, puts: [], deletes: [], leases: [{ id: 78, ttlMs: 10_000, remainingMs: 9_000 }] }));
  assert.equal(codeOf(absent), 'applied');
  assert.equal(store.lease(78), null);
  apply({ type: 'leaseGrant', ttlMs: 20_000, id: 79 });
  apply(importOf({ prefix: '/pay/', clear: false, floor: 0, puts: [], deletes: [], leases: [{ id: 79, ttlMs: 10_000, remainingMs: 1_000 }] }));
  assert.deepEqual({ ttl: store.lease(79)?.ttlMs, remaining: store.lease(79)?.remainingMs }, { ttl: 20_000, remaining: 20_000 });
  assert.equal(store.range({ type: 'get', key: '/pay/s' }).kvs[0]?.lease, 77);
});

test('lease ids repeat across cells: an import tells the moved lease from this cell\'s lease of the same id by its origin', () => {
  const { store, apply } = batchCell();
  apply(table(2, 'cell-1'));
  // This cell (cell-2) granted lease 50 to its own client; cell-1 granted its own lease 50 to another.
  apply({ type: 'leaseGrant', ttlMs: 10_000, id: 50 });
  const theirs = { id: 50, ttlMs: 10_000, remainingMs: 4_000, origin: 'cell-1' };
  const [collision] = apply(importOf({ prefix: '/pay/', clear: true, floor: 5, puts: [kv('/pay/x', 'X', 4, 4, 1, 50)], deletes: [], leases: [theirs], destination: 'cell-2' }));
  assert.equal(codeOf(collision), 'precondition_failed', 'two owners\' leases are never merged under one id');
  assert.equal(store.range({ type: 'get', key: '/pay/', prefix: true }).count, 0, 'and nothing of the import is written');
  assert.deepEqual(store.keysOfLease(50), []);
  assert.equal(store.leaseOrigin(50), null);
  // A lease cell-2 does not hold comes with its origin, and a later import of the same lease raises it.
  const moved = { id: 60, ttlMs: 10_000, origin: 'cell-1' };
  apply(importOf({ prefix: '/pay/', clear: true, floor: 5, puts: [kv('/pay/y', 'Y', 4, 4, 1, 60)], deletes: [], leases: [{ ...moved, remainingMs: 3_000 }], destination: 'cell-2' }));
  assert.equal(store.leaseOrigin(60), 'cell-1');
  const [again] = apply(importOf({ prefix: '/pay/', clear: false, floor: 6, puts: [kv('/pay/y', 'Y2', 4, 6, 2, 60)], deletes: [], leases: [{ ...moved, remainingMs: 5_000 }], destination: 'cell-2' }));
  assert.equal(codeOf(again), 'applied');
  assert.equal(store.lease(60)?.remainingMs, 5_000);
  const [third] = apply(importOf({ prefix: '/pay/', clear: false, floor: 6, puts: [kv('/pay/z', 'Z', 6, 6, 1, 60)], deletes: [], leases: [{ ...moved, origin: 'cell-3', remainingMs: 5_000 }], destination: 'cell-2' }));
  assert.equal(codeOf(third), 'precondition_failed', 'another cell\'s lease 60 is not this one');
  // Coming home: a lease this cell granted, moved back from another cell, is the same lease.
  apply({ type: 'leaseGrant', ttlMs: 10_000, id: 70 });
  const [home] = apply(importOf({ prefix: '/pay/', clear: false, floor: 6, puts: [kv('/pay/h', 'H', 6, 6, 1, 70)], deletes: [], leases: [{ id: 70, ttlMs: 10_000, remainingMs: 2_000, origin: 'cell-2' }], destination: 'cell-2' }));
  assert.equal(codeOf(home), 'applied');
  assert.deepEqual(store.keysOfLease(70), ['/pay/h']);
  assert.equal(store.leaseOrigin(70), null);
  // Owned now: renewals carried by an import of leases alone raise the moved lease, never this cell's own lease 50.
  apply(table(3, 'cell-2'), { type: 'leaseCheckpoint', leases: [{ id: 50, remainingMs: 1_000 }, { id: 60, remainingMs: 1_000 }] });
  apply(importOf({ prefix: '/pay/', clear: false, floor: 0, puts: [], deletes: [], leases: [{ ...theirs, remainingMs: 9_000 }, { ...moved, remainingMs: 9_000 }], destination: 'cell-2' }));
  assert.equal(store.lease(50)?.remainingMs, 1_000, 'cell-2\'s own lease 50 is not kept alive by cell-1\'s renewals');
  assert.equal(store.lease(60)?.remainingMs, 9_000);
  // A revoked lease takes its origin with it: a later lease granted here under that id is this cell's own.
  apply({ type: 'leaseRevoke', id: 60 });
  assert.equal(store.leaseOrigin(60), null);
  apply({ type: 'leaseGrant', ttlMs: 10_000, id: 60 });
  apply(importOf({ prefix: '/pay/', clear: false, floor: 0, puts: [], deletes: [], leases: [{ ...moved, remainingMs: 9_000 }], destination: 'cell-2' }));
  assert.equal(store.lease(60)?.remainingMs, 10_000);
  apply({ type: 'leaseCheckpoint', leases: [{ id: 60, remainingMs: 1_000 }] });
  apply(importOf({ prefix: '/pay/', clear: false, floor: 0, puts: [], deletes: [], leases: [{ ...moved, remainingMs: 9_000 }], destination: 'cell-2' }));
  assert.equal(store.lease(60)?.remainingMs, 1_000, 'the new lease 60 is not the moved one');
});

test("an import's clear leaves the keys of namespaces nested in it, and it never names one of their keys", () => {
  // cell-2 holds /pay/eu/ (its own, nested in /pay/, which moves here from cell-1): the copy's
  // first batch clears /pay/'s range here, and /pay/eu/'s keys must survive it.
  const { store, apply } = batchCell();
  apply({
    type: 'ownershipSet',
    record: text(JSON.stringify({
      epoch: 3, cell: 'cell-2',
      namespaces: [{ prefix: '/', cell: 'cell-2', epoch: 1 }, { prefix: '/pay/', cell: 'cell-1', epoch: 2 }, { prefix: '/pay/eu/', cell: 'cell-2', epoch: 3 }],
      cells: [{ id: 'cell-1', endpoints: ['http://a:1'] }, { id: 'cell-2', endpoints: ['http://b:1'] }],
    })),
  });
  assert.equal(codeOf(apply({ type: 'put', key: '/pay/eu/1', value: text('eu') })[0]), 'applied');
  const first = { prefix: '/pay/', clear: true, floor: 50, puts: [kv('/pay/a', 'A', 10, 20, 1)], deletes: [], leases: [] };
  assert.equal(codeOf(apply(importOf({ ...first, exclude: ['/pay/eu/'] }))[0]), 'applied');
  const keys = (): string[] => store.range({ type: 'get', key: '/pay/', prefix: true }).kvs.map((k) => k.key);
  assert.deepEqual(keys(), ['/pay/a', '/pay/eu/1'], 'the nested namespace kept its key');
  // A record naming a nested namespace's key is refused whole (400), changing nothing.
  const [named] = apply(importOf({ ...first, clear: false, puts: [kv('/pay/eu/2', 'X', 10, 20, 1)], exclude: ['/pay/eu/'] }));
  assert.equal(codeOf(named), 'invalid_argument');
  const [deleted] = apply(importOf({ ...first, clear: false, puts: [], deletes: ['/pay/eu/1'], exclude: ['/pay/eu/'] }));
  assert.equal(codeOf(deleted), 'invalid_argument');
  // An exclude that is not nested in the prefix is malformed.
  assert.equal(codeOf(apply(importOf({ ...first, exclude: ['/other/'] }))[0]), 'invalid_argument');
  assert.deepEqual(keys(), ['/pay/a', '/pay/eu/1']);
  // Without exclude (what a protocol-3 mover sends) the clear takes the whole range: why a move of
  // a namespace with nested ones needs every member on protocol 4 (member-builds.ts).
  assert.equal(codeOf(apply(importOf({ ...first, puts: [] }))[0]), 'applied');
  assert.deepEqual(keys(), []);
});
