// Authorization's one decision (src/auth): prefixes and ranges as byte ranges with exclusive ends,
// coverage by the union of permissions, default deny, root, and every access a command makes
// (both txn branches and its compares, a revoke's attached keys, a lease's key list, lock and
// election queues, admin commands).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  commandAccesses, decide, keyRange, leaseInfoAccesses, openPolicy, prefixRange, readAccesses, watchAccesses, type AccessLookup,
  type AuthOp, type Permission, type Policy,
} from '../../../src/auth/index.js';
import type { Command } from '../../../src/mvcc/index.js';

const enc = (text: string): Uint8Array => new TextEncoder().encode(text);

function policy(roles: Record<string, [string, AuthOp[]][]>, bindings: Record<string, string[]>): Policy {
  const toPermission = ([prefix, ops]: [string, AuthOp[]]): Permission => ({ range: prefixRange(prefix), ops: new Set(ops) });
  return {
    enabled: true,
    roles: new Map(Object.entries(roles).map(([name, perms]) => [name, perms.map(toPermission)])),
    bindings: new Map(Object.entries(bindings)),
    users: new Map(),
    tokenKey: null,
  };
}

const p = policy(
  {
    config: [['/config/app/', ['read', 'watch']]],
    writer: [['/jobs/', ['write', 'read']], ['/leases-ok/', ['lease']]],
    split: [['/a/', ['read']], ['/a0', ['read']]], // '/a/' then '/a0'...: contiguous byte ranges
    locker: [['/locks/report/', ['lock']]],
    ops: [['', ['admin']]],
  },
  { svc: ['config'], worker: ['writer', 'locker'], reader: ['split'], admin: ['ops'], boss: ['root'] },
);
const noLeases: AccessLookup = { leaseKeys: () => [] };
const ok = (principal: string | null, command: Command, lookup = noLeases): boolean => decide(p, principal, commandAccesses(command, lookup)).allowed;

test('off: everything is allowed; on: anonymous is denied, root and the root role are allowed', () => {
  const put: Command = { type: 'put', key: '/x', value: enc('v') };
  assert.equal(decide(openPolicy, null, commandAccesses(put, noLeases)).allowed, true);
  assert.equal(ok(null, put), false);
  assert.equal(ok('root', put), true);
  assert.equal(ok('boss', put), true);
  assert.equal(ok('nobody', put), false);
});

test('a prefix permission covers its keys and nothing beside them', () => {
  assert.equal(decide(p, 'svc', readAccesses({ key: '/config/app/db', prefix: false })).allowed, true);
  assert.equal(decide(p, 'svc', readAccesses({ key: '/config/app/', prefix: true })).allowed, true);
  assert.equal(decide(p, 'svc', readAccesses({ key: '/config/', prefix: true })).allowed, false, 'a wider prefix');
  assert.equal(decide(p, 'svc', readAccesses({ key: '/config/application', prefix: false })).allowed, false, 'a sibling sharing the text');
  assert.equal(decide(p, 'svc', readAccesses({ key: '/config/app', prefix: false })).allowed, false, 'the prefix without its slash');
  // A range read inside the prefix, and one whose exclusive end reaches just past it.
  assert.equal(decide(p, 'svc', readAccesses({ key: '/config/app/a', rangeEnd: enc('/config/app/z') })).allowed, true);
  assert.equal(decide(p, 'svc', readAccesses({ key: '/config/app/a', rangeEnd: enc('/config/app0') })).allowed, true, 'the end is exclusive');
  assert.equal(decide(p, 'svc', readAccesses({ key: '/config/app/a', rangeEnd: enc('/config/app0\u0000') })).allowed, false);
  assert.equal(decide(p, 'svc', watchAccesses({ key: '/config/app/', prefix: true })).allowed, true);
  assert.equal(decide(p, 'svc', commandAccesses({ type: 'put', key: '/config/app/db', value: enc('v') }, noLeases)).allowed, false, 'read is not write');
});

test('a range is allowed when the union of permissions covers it, not when a gap remains', () => {
  // '/a/' covers ['/a/', '/a0'), '/a0' covers ['/a0', '/a1'): together ['/a/', '/a1').
  assert.equal(decide(p, 'reader', readAccesses({ key: '/a/x', rangeEnd: enc('/a0z') })).allowed, true);
  assert.equal(decide(p, 'reader', readAccesses({ key: '/a/x', rangeEnd: enc('/a2') })).allowed, false);
});

test('a txn needs read on every compare and every operation of both branches', () => {
  const txn = (failurePut: string): Command => ({
    type: 'txn',
    compare: [{ key: '/jobs/1', target: 'version', op: '==', value: 0 }],
    success: [{ type: 'put', key: '/jobs/1', value: enc('a') }],
    failure: [{ type: 'get', key: '/jobs/1' }, { type: 'put', key: failurePut, value: enc('b') }],
  });
  assert.equal(ok('worker', txn('/jobs/2')), true);
  assert.equal(ok('worker', txn('/config/app/x')), false, 'the failure branch writes outside: denied even if it would not run');
  const peek: Command = { type: 'txn', compare: [{ key: '/config/app/secret', target: 'value', op: '==', value: enc('x') }], success: [], failure: [] };
  assert.equal(ok('worker', peek), false, 'a compare reveals the key');
});

test('revoking a lease deletes its keys: it needs write on each; its key list needs read on each', () => {
  const lookup = { leaseKeys: (id: number) => (id === 7 ? ['/jobs/1', '/config/app/x'] : ['/jobs/2']) };
  const grant: Command = { type: 'leaseGrant', ttlMs: 10_000 };
  assert.equal(ok('worker', grant), true);
  assert.equal(ok('svc', grant), false, 'no lease op');
  assert.equal(ok('worker', { type: 'leaseRevoke', id: 8 }, lookup), true);
  assert.equal(ok('worker', { type: 'leaseRevoke', id: 7 }, lookup), false, 'a key it may not write is attached');
  assert.equal(decide(p, 'worker', leaseInfoAccesses(lookup.leaseKeys(8))).allowed, true);
  assert.equal(decide(p, 'worker', leaseInfoAccesses([])).allowed, true);
  assert.equal(decide(p, 'worker', leaseInfoAccesses(lookup.leaseKeys(7))).allowed, false, 'the key list would reveal /config/app/x');
});

test('lock and election queues are decided by their own operations; admin commands need admin on every key', () => {
  const acquire = (prefix: string): Command => ({ type: 'seqCreate', prefix, value: enc(''), lease: 1, ifEmpty: false });
  assert.equal(ok('worker', acquire('/locks/report/')), true);
  assert.equal(ok('worker', acquire('/locks/other/')), false);
  assert.equal(ok('worker', acquire('/elections/report/')), false, 'a lock permission is not an election one');
  assert.equal(ok('worker', { type: 'compact', revision: 5 }), false);
  assert.equal(ok('admin', { type: 'compact', revision: 5 }), true);
  assert.equal(ok('worker', { type: 'leaseCheckpoint', leases: [] }), true, "the leader's own housekeeping makes no access");
});

test('keyRange is exactly one key', () => {
  const one = keyRange('/k');
  assert.deepEqual([...one.from], [...enc('/k')]);
  assert.deepEqual([...(one.to as Uint8Array)], [...enc('/k'), 0]);
});
