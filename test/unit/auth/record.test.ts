// The policy record's JSON (src/auth/record.ts): what the admin API accepts, with a clear error
// for everything else; canonical bytes; and the decision reading it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, decodePolicyRecord, encodePolicyJson, parsePolicyJson, policyOf, readAccesses } from '../../../src/auth/index.js';

const valid = {
  enabled: true,
  roles: { reader: [{ prefix: '/config/', ops: ['watch', 'read'] }, { key: '/a', rangeEnd: '/b', ops: ['read'] }] },
  bindings: { 'svc-a': ['reader'], ops: ['root'] },
};

test('a valid policy parses, encodes canonically, and decides', () => {
  const parsed = parsePolicyJson(valid);
  assert.deepEqual(parsed.roles['reader']?.[0]?.ops, ['read', 'watch'], 'ops sorted');
  const bytes = encodePolicyJson(parsed);
  assert.deepEqual(encodePolicyJson(parsePolicyJson(JSON.parse(Buffer.from(bytes).toString()))), bytes);
  assert.deepEqual(decodePolicyRecord(bytes), parsed);
  const policy = policyOf(parsed);
  assert.equal(decide(policy, 'svc-a', readAccesses({ key: '/config/x' })).allowed, true);
  assert.equal(decide(policy, 'svc-a', readAccesses({ key: '/a0' })).allowed, true);
  assert.equal(decide(policy, 'svc-a', readAccesses({ key: '/b' })).allowed, false, 'rangeEnd is exclusive');
  assert.equal(decide(policy, 'ops', readAccesses({ key: '/anything' })).allowed, true, 'bound to root');
  assert.deepEqual(decodePolicyRecord(null), { enabled: false, roles: {}, bindings: {} });
});

test('everything else is refused with a message naming what is wrong', () => {
  const refused = (json: unknown, pattern: RegExp): void => assert.throws(() => parsePolicyJson(json), pattern);
  refused([], /the policy must be a JSON object/);
  refused({ enabled: 'yes' }, /enabled must be true or false/);
  refused({ extra: 1 }, /unknown policy field "extra"/);
  refused({ roles: { r: [{ ops: ['read'] }] } }, /exactly one of key and prefix/);
  refused({ roles: { r: [{ key: '/a', prefix: '/b', ops: ['read'] }] } }, /exactly one of key and prefix/);
  refused({ roles: { r: [{ prefix: '/a', rangeEnd: '/b', ops: ['read'] }] } }, /rangeEnd goes with key/);
  refused({ roles: { r: [{ prefix: 'a', ops: ['read'] }] } }, /prefix must begin with \//);
  refused({ roles: { r: [{ prefix: '/a/../b', ops: ['read'] }] } }, /segment/);
  refused({ roles: { r: [{ prefix: '/a', ops: ['fly'] }] } }, /unknown op "fly"/);
  refused({ roles: { r: [{ prefix: '/a', ops: [] }] } }, /ops must list/);
  refused({ roles: { 'bad name': [] } }, /role name/);
  refused({ roles: {}, bindings: { p: ['missing'] } }, /no role "missing"/);
  refused({ roles: Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`r${i}`, []])) }, /at most 1000 roles/);
});
