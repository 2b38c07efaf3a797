// etcd's Auth API on a real 3-process cell, driven the way etcd's users drive it: etcdctl 3.4
// (`user`, `role`, `auth enable`, `--user name:password`) over the gRPC facade, and the JSON
// gateway (`/v3/auth/authenticate`, then `Authorization: TOKEN`). Users, roles and grants are the
// same replicated policy the native API decides with; tokens verify on every member, survive a
// member's restart, stay valid across unrelated role changes (etcd #13300) and stop at once when
// their user's password changes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import WebSocket from 'ws';
import { findEtcdctl } from './etcdctl-path.js';
import { http, startTestCell, type TestCell } from './harness.js';

const etcdctl = findEtcdctl();
let cell: TestCell;

before(async () => {
  if (etcdctl !== null) cell = await startTestCell({ grpc: true });
});

after(async () => {
  await cell?.close();
});

/** etcdctl against `member`, asynchronously (the cell's log pipes keep draining meanwhile). */
function ctl(args: readonly string[], member = 'n1'): Promise<{ ok: boolean; said: string }> {
  return new Promise((resolve) => {
    const child = spawn(etcdctl as string, ['--endpoints', cell.cell.grpcEndpoint(member), '--command-timeout', '5s', ...args], { env: { ...process.env, ETCDCTL_API: '3' } });
    let said = '';
    child.stdout.on('data', (chunk: Buffer) => (said += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (said += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('close', (status: number | null) => {
      clearTimeout(timer);
      resolve({ ok: status === 0, said });
    });
    child.stdin.end();
  });
}

async function must(args: readonly string[], member?: string): Promise<string> {
  const run = await ctl(args, member);
  assert.ok(run.ok, `etcdctl ${args.join(' ')}: ${run.said}`);
  return run.said;
}

async function refused(args: readonly string[], pattern: RegExp, member?: string): Promise<void> {
  const run = await ctl(args, member);
  assert.ok(!run.ok, `etcdctl ${args.join(' ')} should fail: ${run.said}`);
  assert.match(run.said, pattern);
}

const b64 = (text: string): string => Buffer.from(text).toString('base64');

function gateway(path: string, body: unknown, token?: string, member = 'n1') {
  return http(`http://${cell.cell.grpcEndpoint(member)}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: token }) },
    body: JSON.stringify(body),
  });
}

const skip = etcdctl === null ? 'no etcdctl (apt-get install etcd-client)' : false;

test('users, roles and auth enable through etcdctl; then every call is decided as its user', { skip }, async () => {
  await must(['user', 'add', 'root:rootpw']);
  await must(['role', 'add', 'root']);
  await must(['user', 'grant-role', 'root', 'root']);
  await must(['role', 'add', 'app']);
  await must(['role', 'grant-permission', 'app', 'readwrite', 'app/', '--prefix']);
  await must(['role', 'grant-permission', 'app', 'read', 'shared']);
  await must(['user', 'add', 'alice:alicepw']);
  await must(['user', 'grant-role', 'alice', 'app']);
  await must(['user', 'add', 'bob:bobpw']);
  await refused(['user', 'add', 'bob:again'], /user name already exists/);
  await refused(['user', 'grant-role', 'bob', 'nosuchrole'], /role name not found/);
  assert.match(await must(['user', 'get', 'alice']), /Roles: app/);
  assert.match(await must(['role', 'get', 'app']), /KV Read:\s+\[app\/, app0\) \(prefix app\/\)\s+shared/);
  assert.match(await must(['user', 'list']), /alice\s+bob\s+root/);
  assert.match(await must(['role', 'list']), /app\s+root/);
  await must(['put', 'shared', 'v0']);
  assert.match(await must(['auth', 'enable']), /Authentication Enabled/);

  await must(['--user', 'alice:alicepw', 'put', 'app/x', 'v1']);
  assert.match(await must(['--user', 'alice:alicepw', 'get', 'app/x']), /app\/x\s+v1/);
  assert.match(await must(['--user', 'alice:alicepw', 'get', 'shared']), /shared\s+v0/);
  await refused(['--user', 'alice:alicepw', 'put', 'shared', 'v'], /permission denied/);
  await refused(['--user', 'alice:alicepw', 'get', 'other/x'], /permission denied/);
  await refused(['--user', 'bob:bobpw', 'get', 'app/x'], /permission denied/);
  await refused(['--user', 'alice:wrong', 'get', 'app/x'], /authentication failed, invalid user ID or password/);
  await refused(['put', 'app/x', 'anonymous'], /permission denied/);
  await refused(['--user', 'alice:alicepw', 'user', 'list'], /permission denied/, 'n2');
  // Every member verifies every user.
  assert.match(await must(['--user', 'alice:alicepw', 'get', 'app/x'], 'n3'), /v1/);
  assert.match(await must(['--user', 'root:rootpw', 'user', 'list'], 'n2'), /alice/);
  await refused(['--user', 'root:rootpw', 'user', 'delete', 'root'], /invalid auth management/);
});

test('a token verifies on every member, survives a restart and unrelated role changes, and dies with its password', { skip }, async () => {
  const got = await gateway('/v3/auth/authenticate', { name: 'alice', password: 'alicepw' });
  assert.equal(got.status, 200, JSON.stringify(got.body));
  const token = got.body.token as string;
  for (const member of cell.names) {
    const put = await gateway('/v3/kv/put', { key: b64('app/gw'), value: b64(member) }, token, member);
    assert.equal(put.status, 200, `${member}: ${JSON.stringify(put.body)}`);
  }
  const denied = await gateway('/v3/kv/put', { key: b64('other/gw'), value: b64('v') }, token);
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error, 'etcdserver: permission denied');

  // Another role changes: alice's token stays valid (etcd's JWTs did not, #13300).
  await must(['--user', 'root:rootpw', 'role', 'add', 'unrelated']);
  await must(['--user', 'root:rootpw', 'role', 'grant-permission', 'unrelated', 'read', 'z/', '--prefix']);
  assert.equal((await gateway('/v3/kv/range', { key: b64('app/gw') }, token, 'n2')).status, 200);

  // A member restarts: the token key is replicated state, so the token still verifies there.
  await cell.cell.kill9('n2');
  cell.cell.start('n2');
  await cell.cell.waitReady(30_000);
  assert.equal((await gateway('/v3/kv/range', { key: b64('app/gw') }, token, 'n2')).status, 200);

  // The password changes: every token issued for the old one stops, on every member.
  const changed = await ctlWithInput(['--user', 'root:rootpw', 'user', 'passwd', 'alice', '--interactive=false'], 'newpw\n');
  assert.ok(changed.ok, changed.said);
  for (const member of cell.names) {
    let answer = await gateway('/v3/kv/range', { key: b64('app/gw') }, token, member);
    for (let i = 0; i < 50 && answer.status === 200; i++) answer = await gateway('/v3/kv/range', { key: b64('app/gw') }, token, member);
    assert.equal(answer.status, 401, `${member}: ${JSON.stringify(answer.body)}`);
    assert.equal(answer.body.error, 'etcdserver: invalid auth token');
  }
  assert.match(await must(['--user', 'alice:newpw', 'get', 'app/gw']), /app\/gw/);
  await refused(['--user', 'alice:alicepw', 'get', 'app/gw'], /authentication failed/);
});

test('the native API takes the same tokens (Authorization: Bearer), and auth disable opens the cell again', { skip }, async () => {
  const got = await http(`${cell.cell.clientUrl('n3')}/v1/auth/authenticate`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'alice', password: 'newpw' }),
  });
  assert.equal(got.status, 200, JSON.stringify(got.body));
  const bearer = { authorization: `Bearer ${got.body.token as string}` };
  assert.equal((await http(`${cell.cell.clientUrl('n1')}/v1/kv/app/native`, { method: 'PUT', headers: bearer, body: 'v' })).status, 201);
  assert.equal((await http(`${cell.cell.clientUrl('n1')}/v1/kv/other/native`, { method: 'PUT', headers: bearer, body: 'v' })).status, 403);
  const forged = await http(`${cell.cell.clientUrl('n1')}/v1/kv/app/native`, { headers: { authorization: 'Bearer YWxpY2U.1.99999999999999.forged' } });
  assert.equal(forged.status, 401);
  assert.equal(forged.body.error.code, 'unauthenticated');
  // The stream takes the token on its upgrade: every frame on the connection is alice's.
  const frames = await streamFrames(cell.cell.clientUrl('n2'), bearer, [
    { id: 1, type: 'put', key: '/app/stream', value: 'v' },
    { id: 2, type: 'put', key: '/other/stream', value: 'v' },
  ]);
  assert.equal(frames.get(1)?.type, 'result');
  assert.equal(frames.get(2)?.type, 'error');
  assert.equal((frames.get(2)?.error as { code?: string } | undefined)?.code, 'permission_denied');
  // The policy read shows users without their secrets.
  const rootToken = (await gateway('/v3/auth/authenticate', { name: 'root', password: 'rootpw' })).body.token as string;
  const policy = await http(`${cell.cell.clientUrl('n1')}/v1/auth/policy`, { headers: { authorization: `Bearer ${rootToken}` } });
  assert.equal(policy.status, 200);
  assert.deepEqual(Object.keys(policy.body.users).sort(), ['alice', 'bob', 'root']);
  assert.ok(!JSON.stringify(policy.body).includes('hash') && policy.body.tokenKey === undefined, 'no password hash or token key in the answer');

  assert.match(await must(['--user', 'root:rootpw', 'auth', 'disable']), /Authentication Disabled/);
  await must(['put', 'other/x', 'anyone']);
});

function streamFrames(url: string, headers: Record<string, string>, frames: readonly Record<string, unknown>[]): Promise<Map<number, Record<string, unknown>>> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/stream`, { headers });
    const answers = new Map<number, Record<string, unknown>>();
    const timer = setTimeout(() => reject(new Error('stream: no answers')), 10_000);
    ws.on('open', () => frames.forEach((frame) => ws.send(JSON.stringify(frame))));
    ws.on('message', (data) => {
      const message = JSON.parse(String(data)) as Record<string, unknown>;
      answers.set(message['id'] as number, message);
      if (answers.size === frames.length) {
        clearTimeout(timer);
        ws.close();
        resolve(answers);
      }
    });
    ws.on('error', reject);
  });
}

function ctlWithInput(args: readonly string[], input: string): Promise<{ ok: boolean; said: string }> {
  return new Promise((resolve) => {
    const child = spawn(etcdctl as string, ['--endpoints', cell.cell.grpcEndpoint('n1'), ...args], { env: { ...process.env, ETCDCTL_API: '3' } });
    let said = '';
    child.stdout.on('data', (chunk: Buffer) => (said += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (said += chunk.toString('utf8')));
    child.on('close', (status: number | null) => resolve({ ok: status === 0, said }));
    child.stdin.end(input);
  });
}
