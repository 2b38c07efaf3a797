// The authorization policy as replicated state on a 3-process cell (slice 2 of
// docs/design/authorization.md): a policy written on one member reads back on the others
// (linearizably), changes go in version order (a stale If-Version is 412 and changes nothing),
// bad policies get clear errors, enabling by a caller who would not be root is refused, and the policy
// survives a member's restart.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { http, startTestCell, type TestCell } from './harness.js';

let cell: TestCell;

before(async () => {
  cell = await startTestCell();
});

after(async () => {
  await cell?.close();
});

const policy = {
  roles: { 'config-reader': [{ prefix: '/config/', ops: ['read', 'watch'] }] },
  bindings: { 'svc-a': ['config-reader'] },
};

function put(name: string, body: unknown, ifVersion?: number) {
  return http(`${cell.cell.clientUrl(name)}/v1/auth/policy`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...(ifVersion === undefined ? {} : { 'if-version': String(ifVersion) }) },
    body: JSON.stringify(body),
  });
}

test('a policy written on one member reads back on every member, in version order', async () => {
  const empty = await http(`${cell.cell.clientUrl('n2')}/v1/auth/policy`);
  assert.equal(empty.status, 200);
  assert.deepEqual(empty.body, { version: 0, enabled: false, roles: {}, bindings: {}, users: {} });
  const written = await put('n1', policy, 0);
  assert.equal(written.status, 200, JSON.stringify(written.body));
  assert.equal(written.body.version, 1);
  for (const name of cell.names) {
    const read = await http(`${cell.cell.clientUrl(name)}/v1/auth/policy`);
    assert.deepEqual(read.body, { version: 1, enabled: false, ...policy, users: {} }, name);
  }
  const stale = await put('n3', { roles: {}, bindings: {} }, 0);
  assert.equal(stale.status, 412, JSON.stringify(stale.body));
  assert.equal(stale.body.error.code, 'precondition_failed');
  const read = await http(`${cell.cell.clientUrl('n3')}/v1/auth/policy`);
  assert.equal(read.body.version, 1, 'the stale change changed nothing');
});

test('bad policies, a missing If-Version and enabling by a caller who would not be root get clear errors', async () => {
  const noVersion = await put('n1', policy);
  assert.equal(noVersion.status, 400);
  assert.match(noVersion.body.error.message, /If-Version/);
  const badOp = await put('n1', { roles: { r: [{ prefix: '/x/', ops: ['fly'] }] } }, 1);
  assert.equal(badOp.status, 400);
  assert.match(badOp.body.error.message, /unknown op "fly"/);
  const enabling = await put('n1', { ...policy, enabled: true }, 1);
  assert.equal(enabling.status, 400);
  assert.match(enabling.body.error.message, /needs the caller to be root under the new policy: an anonymous caller would not be/);
  const read = await http(`${cell.cell.clientUrl('n2')}/v1/auth/policy`);
  assert.equal(read.body.enabled, false, 'nothing changed');
});

test('the policy survives a restart of the member that wrote it', async () => {
  await cell.cell.kill9('n1');
  cell.cell.start('n1');
  await cell.cell.waitReady(30_000);
  const read = await http(`${cell.cell.clientUrl('n1')}/v1/auth/policy`);
  assert.equal(read.status, 200);
  assert.deepEqual(read.body, { version: 1, enabled: false, ...policy, users: {} });
});
