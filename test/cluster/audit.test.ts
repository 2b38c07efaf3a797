// The audit log (--audit-log FILE) on a real 3-process cell: audited changes (policy and users,
// a client's lease revocation, a lock entry deleted by a client, compaction, membership changes)
// are recorded by every member with the same index, and the member that answered has the record
// on disk before its answer; a refusal is recorded by the member that refused it; `baton audit`
// reads the log; a member whose log cannot be written (/dev/full) refuses audited changes with
// 503 and keeps serving everything else.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { freePorts, http, sleep, startTestCell, type TestCell } from './harness.js';

let cell: TestCell;
const logOf = (name: string): string => join(cell.dataDir, `audit-${name}.log`);

before(async () => {
  cell = await startTestCell({ grpc: true, argsFor: (name, dataDir) => ['--audit-log', join(dataDir, `audit-${name}.log`)] });
});

after(async () => {
  await cell?.close();
});

interface Line {
  readonly event: string;
  readonly principal: string | null;
  readonly address?: string | null;
  readonly index?: number;
  readonly result: string;
  readonly member: number;
  readonly detail?: Record<string, unknown>;
}

function records(name: string): Line[] {
  if (!existsSync(logOf(name))) return [];
  return readFileSync(logOf(name), 'utf8').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Line);
}

/** Waits until every member has at least `count` records of `event`, naming the same entries. */
async function onEveryMember(event: string, count = 1): Promise<Line[]> {
  let seen: Line[][] = [];
  for (let i = 0; i < 150; i++) {
    seen = cell.names.map((name) => records(name).filter((r) => r.event === event));
    const indexes = seen.map((lines) => lines.map((r) => r.index).join(','));
    if (seen.every((lines) => lines.length >= count) && new Set(indexes).size === 1) return seen.map((lines) => lines.at(-1) as Line);
    await sleep(20);
  }
  assert.fail(`members do not agree on their ${event} records: ${JSON.stringify(seen)}`);
}

const url = (name: string, path: string): string => `${cell.cell.clientUrl(name)}${path}`;

/** A DELETE from a chosen local port, so the test knows the source address the member sees. */
function deleteFrom(target: string, localPort: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const call = request(target, { method: 'DELETE', localAddress: '127.0.0.1', localPort, agent: false, timeout: 10_000 }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    call.once('timeout', () => call.destroy(new Error('no answer in 10 s')));
    call.once('error', reject);
    call.end();
  });
}

test('audited changes are recorded by every member, durable on the answering member before its answer', async () => {
  const policy = await http(url('n2', '/v1/auth/policy'), { method: 'PUT', headers: { 'if-version': '0', 'content-type': 'application/json' },
    body: JSON.stringify({ roles: { r: [{ prefix: '/app/', ops: ['read'] }] }, bindings: {} }) });
  assert.equal(policy.status, 200, JSON.stringify(policy.body));
  assert.ok(records('n2').some((r) => r.event === 'policy' && r.result === 'ok'), 'on disk on n2 when n2 answered');
  await onEveryMember('policy');

  const lease = await http(url('n1', '/v1/leases'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ttl: 60 }) });
  const id = lease.body.id as number;
  await http(url('n1', '/v1/kv/app/leased'), { method: 'PUT', headers: { 'lease-id': String(id) }, body: 'v' });
  const [clientPort] = await freePorts(1);
  assert.equal(await deleteFrom(url('n3', `/v1/leases/${id}`), clientPort as number), 200);
  assert.ok(records('n3').some((r) => r.event === 'lease-revoke' && r.detail?.['lease'] === id), 'on disk on n3 when n3 answered');
  const revoked = await onEveryMember('lease-revoke');
  assert.equal(revoked[0]?.principal, '', 'a client (anonymous), not the cell\'s own expiry');
  // Decided at apply: every member writes the client's address as n3 saw it (it travels in the entry).
  for (const record of revoked) assert.equal(record.address, `127.0.0.1:${clientPort as number}`, JSON.stringify(record));

  const acquired = await http(url('n1', '/v1/locks/job/acquire'), { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ lease: (await http(url('n1', '/v1/leases'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ttl: 60 }) })).body.id, waitMs: 0 }) });
  assert.equal(acquired.status, 200, JSON.stringify(acquired.body));
  // An operator deleting the holder's key: a forced release.
  assert.equal((await http(url('n1', `/v1/kv${acquired.body.key as string}`), { method: 'DELETE' })).status, 200);
  const released = await onEveryMember('lock-release');
  assert.equal(released[0]?.detail?.['key'], acquired.body.key);

  const status = await http(url('n1', '/v1/cluster/status'));
  assert.equal((await http(url('n1', '/v1/maintenance/compact'), { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ revision: status.body.revision }) })).status, 200);
  await onEveryMember('compact');

  const added = await http(url('n1', '/v1/cluster/members'), { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'spare', peerUrl: 'http://127.0.0.1:1', clientUrl: 'http://127.0.0.1:2' }) });
  assert.equal(added.status, 201, JSON.stringify(added.body));
  assert.equal((await http(url('n1', `/v1/cluster/members/${added.body.member.id as number}`), { method: 'DELETE' })).status, 200);
  await onEveryMember('membership', 2); // the add and the removal (the same entries everywhere)

  // A snapshot download: a copy of every key leaves the cell; on disk before the first byte.
  const snapshot = await fetch(url('n3', '/v1/maintenance/snapshot'));
  assert.equal(snapshot.status, 200);
  assert.ok(records('n3').some((r) => r.event === 'snapshot-save' && r.principal === '' && /^127\.0\.0\.1:\d+$/.test(r.address ?? '')), 'n3 recorded the snapshot save and who took it');
  await snapshot.arrayBuffer();
  const saved = spawnSync('etcdctl', ['--endpoints', cell.cell.grpcEndpoint('n1'), 'snapshot', 'save', join(cell.dataDir, 'audit-snap.db')],
    { env: { ...process.env, ETCDCTL_API: '3' }, encoding: 'utf8' });
  if (saved.error === undefined) {
    assert.equal(saved.status, 0, saved.stderr);
    assert.ok(records('n1').some((r) => r.event === 'snapshot-save' && r.detail?.['via'] === 'grpc' && /^127\.0\.0\.1:\d+$/.test(r.address ?? '')), 'n1 recorded the etcdctl snapshot save');
  }

  // Puts are not audited: the log stays small.
  const before = records('n1').length;
  for (let i = 0; i < 20; i++) await http(url('n1', `/v1/kv/app/p${i}`), { method: 'PUT', body: 'v' });
  assert.equal(records('n1').length, before);
});

test('a refusal is recorded by the member that refused it; baton audit reads the log', async () => {
  const gw = (path: string, body: unknown) => http(`http://${cell.cell.grpcEndpoint('n1')}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  for (const [path, body] of [
    ['/v3/auth/user/add', { name: 'root', password: 'pw' }], ['/v3/auth/role/add', { name: 'root' }],
    ['/v3/auth/user/grant', { user: 'root', role: 'root' }], ['/v3/auth/enable', {}],
  ] as const) assert.equal((await gw(path, body)).status, 200, path);
  const denied = await http(url('n3', '/v1/kv/app/x'), { method: 'PUT', body: 'anonymous' });
  assert.equal(denied.status, 403);
  // A refusal's record is written after the answer (nothing was acknowledged): wait for it, bounded.
  let recorded = false;
  for (let i = 0; i < 100 && !recorded; i++) {
    recorded = records('n3').some((r) => r.event === 'denied' && r.principal === '' && /^127\.0\.0\.1:\d+$/.test(r.address ?? ''));
    if (!recorded) await sleep(20);
  }
  assert.ok(recorded, 'n3 recorded its refusal');
  assert.ok(!records('n3').some((r) => JSON.stringify(r).includes('"hash"')), 'no password hash is ever written');
  const baton = join(process.cwd(), 'dist', 'src', 'cli', 'main.js');
  const grep = execFileSync(process.execPath, [baton, 'audit', 'grep', logOf('n1'), '--event', 'policy'], { encoding: 'utf8' });
  assert.ok(grep.trim().split('\n').length >= 5, `policy and user changes: ${grep}`);
  assert.ok(grep.split('\n').filter((l) => l !== '').every((l) => (JSON.parse(l) as Line).event === 'policy'));
  const tail = execFileSync(process.execPath, [baton, 'audit', 'tail', logOf('n3'), '-n', '1'], { encoding: 'utf8' });
  assert.equal((JSON.parse(tail) as Line).event, 'denied');
});

test('a member whose audit log cannot be written refuses audited changes with 503 and serves the rest', async () => {
  const rootToken = (await http(`http://${cell.cell.grpcEndpoint('n1')}/v3/auth/authenticate`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'root', password: 'pw' }) })).body.token as string;
  const auth = { authorization: `Bearer ${rootToken}` };
  // n2 restarts with its log on /dev/full: every write to it fails (ENOSPC).
  await cell.cell.kill9('n2');
  cell.cell.start('n2', { extraArgs: ['--audit-log', '/dev/full'] });
  await cell.cell.waitReady(30_000);
  await sleep(200);
  // The first audited change after the failure may commit unanswered (503: its record could not
  // be made durable, so its outcome is unknown to the client, as a timeout); later ones are refused.
  await http(url('n2', '/v1/maintenance/compact'), { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ revision: 1 }) });
  const second = await http(url('n2', '/v1/maintenance/compact'), { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ revision: 1 }) });
  assert.equal(second.status, 503, JSON.stringify(second.body));
  assert.match(second.body.error.message, /audit log cannot be written/);
  const put = await http(url('n2', '/v1/kv/app/x'), { method: 'PUT', headers: auth, body: 'still serving' });
  assert.ok(put.status === 200 || put.status === 201, `a put is not audited: ${put.status}`);
});
