// The authorization matrix (issue 25, docs/design/authorization.md): a real 3-process cell with TLS
// on every listener, authorization enabled, and four principals: anonymous (no certificate),
// bob (a user of another prefix), alice (a user of this prefix) and root. Every operation of the
// native HTTP API, the stream, the etcd gRPC facade (driven by etcdctl 3.4) and the JSON gateway
// is tried as each of them and must give exactly the expected outcome: allowed, or refused with
// permission_denied (403 / PERMISSION_DENIED, etcd's "etcdserver: permission denied"), never a
// third thing and never a hint whether a key exists. etcd's holes are named cases. Then the
// degraded and changing states: no leader (denials still come first), a permission removed
// (refused on every member within 1 s, and an open watch ends at once).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import WebSocket from 'ws';
import { issueClientCert, type CertFiles } from '../../src/security/certs.js';
import type { CellTls } from '../../src/node/testing/cell-tls.js';
import { findEtcdctl } from './etcdctl-path.js';
import { sleep, startTestCell, type TestCell } from './harness.js';

type Who = 'anonymous' | 'bob' | 'alice' | 'root';
const everyone: readonly Who[] = ['anonymous', 'bob', 'alice', 'root'];
/** What a case must give: 'ok', 'denied', or 'not denied' (any other answer: a bad request, a conflict). */
type Expected = 'ok' | 'denied' | 'not denied';
type Outcome = 'ok' | 'denied' | `other: ${string}`;

let cell: TestCell;
let tls: CellTls;
const certs = new Map<Who, CertFiles | undefined>();
const etcdctl = findEtcdctl();

const appRole = [
  { prefix: '/app/', ops: ['read', 'write', 'watch', 'lease'] },
  { prefix: '/locks/app/', ops: ['lock'] },
  { prefix: '/elections/app/', ops: ['election'] },
];
// bob has no lease operation: a lease attached to a write of his is refused (etcd's CVE-2026-44283).
const otherRole = [
  { prefix: '/other/', ops: ['read', 'write', 'watch'] },
  { prefix: '/locks/other/', ops: ['lock'] },
  { prefix: '/elections/other/', ops: ['election'] },
];
const policy = {
  enabled: true,
  roles: { app: appRole, other: otherRole, 'wo-writer': [{ prefix: '/wo/', ops: ['write'] }] },
  bindings: { alice: ['app'], bob: ['other', 'wo-writer'] },
};
/** Fixtures written by root before authorization is enabled. */
let appLease = 0;
let policyVersion = 0;

before(async () => {
  cell = await startTestCell({ tls: true, clientCertAuth: false, grpc: true });
  tls = cell.cell.tls as CellTls;
  certs.set('anonymous', undefined);
  certs.set('root', tls.root);
  certs.set('alice', issueClientCert(tls.ca, 'alice'));
  certs.set('bob', issueClientCert(tls.ca, 'bob'));
  for (const key of ['/app/x', '/other/secret', '/wo/k']) await must(http('root', 'PUT', `/v1/kv${key}`, 'v0'));
  const lease = await must(http('root', 'POST', '/v1/leases', JSON.stringify({ ttl: 600 })));
  appLease = lease.json.id as number;
  await must(http('root', 'PUT', '/v1/kv/app/leased', 'v', { 'lease-id': String(appLease) }));
  const set = await must(http('root', 'PUT', '/v1/auth/policy', JSON.stringify(policy), { 'if-version': '0' }));
  policyVersion = set.json.version as number;
  await waitEveryMember((name) => http('alice', 'GET', '/v1/kv/other/secret', undefined, {}, name), 'denied');
});

after(async () => {
  await cell?.close();
});

// ---------------------------------------------------------------------------------------------
// Calls as a principal.

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly json: Record<string, unknown>;
}

function http(who: Who, method: string, path: string, body?: string, headers: Record<string, string> = {}, member = 'n1', port?: number): Promise<Answer> {
  const base = port === undefined ? cell.cell.clientUrl(member) : `https://127.0.0.1:${port}`;
  return new Promise((resolve, reject) => {
    const client = certs.get(who);
    const req = request(`${base}${path}`, {
      method,
      ca: readFileSync(tls.ca.cert),
      ...(client === undefined ? {} : { cert: readFileSync(client.cert), key: readFileSync(client.key) }),
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      timeout: 10_000,
    }, (res) => {
      const status = res.statusCode ?? 0;
      // A stream that opened (a watch, a snapshot, an observation) is an answer: stop reading it.
      if (status === 200 && /event-stream|octet-stream/.test(String(res.headers['content-type']))) {
        req.destroy();
        return resolve({ status, text: '', json: {} });
      }
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: Record<string, unknown> = {};
        try {
          json = JSON.parse(text) as Record<string, unknown>;
        } catch {
          // not JSON (the gateway's text answers)
        }
        resolve({ status, text, json });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in time`)));
    req.on('error', reject);
    req.end(body);
  });
}

async function must(answer: Promise<Answer>): Promise<Answer> {
  const got = await answer;
  assert.ok(got.status >= 200 && got.status < 300, `${got.status} ${got.text}`);
  return got;
}

/** The native API's and the gateway's outcome. */
function httpOutcome(answer: Answer): Outcome {
  if (answer.status >= 200 && answer.status < 300) return 'ok';
  const error = answer.json['error'] as { code?: string } | string | undefined;
  const denied = answer.status === 403 && (
    (typeof error === 'object' && error?.code === 'permission_denied') ||
    (typeof error === 'string' && error === 'etcdserver: permission denied' && answer.json['code'] === 7));
  return denied ? 'denied' : `other: ${answer.status} ${answer.text.slice(0, 160)}`;
}

/**
 * etcdctl as `who`. Asynchronous on purpose: the cell's processes write their logs into pipes this
 * process drains, so a synchronous spawn would stall them (and the command) once a pipe is full.
 */
function etcdctlRun(who: Who, args: readonly string[], options: { input?: string; timeoutMs?: number } = {}): Promise<{ status: number | null; said: string }> {
  const client = certs.get(who);
  return new Promise((resolve) => {
    const child = spawn(etcdctl as string, [
      '--endpoints', `https://${cell.cell.grpcEndpoint('n1')}`, '--cacert', tls.ca.cert, '--command-timeout', '5s',
      ...(client === undefined ? [] : ['--cert', client.cert, '--key', client.key]),
      ...args,
    ], { env: { ...process.env, ETCDCTL_API: '3' } });
    let said = '';
    child.stdout.on('data', (chunk: Buffer) => (said += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (said += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 15_000);
    child.on('close', (status: number | null) => {
      clearTimeout(timer);
      resolve({ status, said });
    });
    child.stdin.end(options.input ?? '');
  });
}

async function ctl(who: Who, args: readonly string[], input?: string): Promise<Outcome> {
  const run = await etcdctlRun(who, args, input === undefined ? {} : { input });
  if (run.status === 0) return 'ok';
  return /etcdserver: permission denied/.test(run.said) ? 'denied' : `other: ${run.status} ${run.said.trim().slice(0, 160)}`;
}

/** A watch that is still open after a while was accepted; a denied one is canceled with etcd's reason. */
async function watching(who: Who, args: readonly string[]): Promise<Outcome> {
  const run = await etcdctlRun(who, args, { timeoutMs: 1_500 });
  if (/permission denied/.test(run.said)) return 'denied';
  return run.status === null ? 'ok' : `other: ${run.status} ${run.said.trim().slice(0, 160)}`;
}

/** One frame on a fresh /v1/stream connection: its result or its error. */
function streamFrame(who: Who, frame: Record<string, unknown>, member = 'n1'): Promise<Outcome> {
  const client = certs.get(who);
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${cell.cell.clientUrl(member).replace('https', 'wss')}/v1/stream`, {
      ca: readFileSync(tls.ca.cert),
      ...(client === undefined ? {} : { cert: readFileSync(client.cert), key: readFileSync(client.key) }),
    });
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`stream frame ${String(frame['type'])}: no answer`));
    }, 10_000);
    ws.on('open', () => ws.send(JSON.stringify({ id: 1, ...frame })));
    ws.on('message', (data) => {
      const message = JSON.parse(String(data)) as { id?: unknown; type: string; error?: { code?: string; message?: string } };
      if (message.id !== 1) return;
      clearTimeout(timer);
      ws.close();
      if (message.type === 'error') {
        resolve(message.error?.code === 'permission_denied' ? 'denied' : `other: ${message.error?.code} ${message.error?.message}`);
      } else {
        resolve('ok');
      }
    });
    ws.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

const b64 = (text: string): string => Buffer.from(text).toString('base64');
const gateway = (who: Who, path: string, body: unknown): Promise<Answer> =>
  http(who, 'POST', path, JSON.stringify(body), {}, 'n1', Number(cell.cell.grpcEndpoint('n1').split(':')[1]));

function allowed(...who: Who[]): Record<Who, Expected> {
  return Object.fromEntries(everyone.map((w) => [w, who.includes(w) ? 'ok' : 'denied'])) as Record<Who, Expected>;
}

function meets(outcome: Outcome, expected: Expected): boolean {
  if (expected === 'not denied') return outcome !== 'denied';
  return outcome === expected;
}

interface Case {
  readonly name: string;
  readonly expected: Record<Who, Expected>;
  run(who: Who): Promise<Outcome> | Outcome;
}

/** Runs every case as every principal and reports all deviations at once. */
async function runMatrix(cases: readonly Case[]): Promise<void> {
  const deviations: string[] = [];
  for (const one of cases) {
    for (const who of everyone) {
      const outcome = await one.run(who);
      if (!meets(outcome, one.expected[who])) deviations.push(`${one.name} as ${who}: expected ${one.expected[who]}, got ${outcome}`);
    }
  }
  assert.deepEqual(deviations, []);
}

async function waitEveryMember(probe: (member: string) => Promise<Answer>, want: Outcome, withinMs = 5_000): Promise<number> {
  const started = performance.now();
  for (const name of cell.names) {
    for (;;) {
      const outcome = httpOutcome(await probe(name));
      if (outcome === want) break;
      if (performance.now() - started > withinMs) assert.fail(`${name}: still ${outcome} after ${withinMs} ms`);
      await sleep(25);
    }
  }
  return performance.now() - started;
}

// ---------------------------------------------------------------------------------------------
// The matrix.

let serial = 0;
const fresh = (): string => `${process.pid}-${++serial}`;

test('the native HTTP API: every operation as every principal', async () => {
  const leader = (await must(http('root', 'GET', '/v1/cluster/status'))).json['leader'] as number;
  const http1 = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    async (who: Who): Promise<Outcome> => httpOutcome(await http(who, method, path, body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body), headers));
  const txn = (compare: unknown[], success: unknown[], failure: unknown[] = []) => http1('POST', '/v1/txn', { compare, success, failure });
  await runMatrix([
    { name: 'put /app/k', expected: allowed('alice', 'root'), run: http1('PUT', '/v1/kv/app/k', 'v') },
    { name: 'put /other/k', expected: allowed('bob', 'root'), run: http1('PUT', '/v1/kv/other/k', 'v') },
    { name: 'linearizable get /app/x', expected: allowed('alice', 'root'), run: http1('GET', '/v1/kv/app/x') },
    { name: 'serializable get /app/x', expected: allowed('alice', 'root'), run: http1('GET', '/v1/kv/app/x?consistency=serializable') },
    { name: 'get of an absent key: 404 only to those who may read it', expected: allowed('bob', 'root'), run: async (who) => {
      const answer = await http(who, 'GET', '/v1/kv/other/absent');
      return answer.status === 404 ? 'ok' : httpOutcome(answer);
    } },
    { name: 'prefix get /app/', expected: allowed('alice', 'root'), run: http1('GET', '/v1/kv/app/?prefix=true') },
    { name: 'prefix get /ap (wider than /app/)', expected: allowed('root'), run: http1('GET', '/v1/kv/ap?prefix=true') },
    { name: 'delete /app/k', expected: allowed('alice', 'root'), run: http1('DELETE', '/v1/kv/app/k') },
    { name: 'prefix delete /other/', expected: allowed('bob', 'root'), run: async (who) => {
      const outcome = httpOutcome(await http(who, 'DELETE', '/v1/kv/other/gone/?prefix=true'));
      return outcome;
    } },
    { name: 'txn on /app/ only', expected: allowed('alice', 'root'),
      run: txn([{ key: '/app/x', target: 'version', op: '>', value: 0 }], [{ put: { key: '/app/y', value: 'v' } }]) },
    { name: 'txn compare on another prefix (a compare reveals)', expected: allowed('root'),
      run: txn([{ key: '/other/secret', target: 'value', op: '==', value: 'v0' }], [{ put: { key: '/app/y', value: 'v' } }]) },
    { name: 'txn get of another prefix in success', expected: allowed('root'),
      run: txn([], [{ put: { key: '/app/y', value: 'v' } }, { get: { key: '/other/secret' } }]) },
    { name: 'txn write to another prefix in the branch that does not run', expected: allowed('root'),
      run: txn([{ key: '/app/x', target: 'version', op: '>', value: 0 }], [{ put: { key: '/app/y', value: 'v' } }], [{ put: { key: '/other/k', value: 'v' } }]) },
    { name: 'lease grant', expected: allowed('alice', 'root'), run: http1('POST', '/v1/leases', { ttl: 60 }) },
    { name: 'lease keepalive', expected: allowed('alice', 'root'), run: async (who) => httpOutcome(await http(who, 'POST', '/v1/leases/keepalive', JSON.stringify({ ids: [appLease] }))) },
    { name: 'lease list', expected: allowed('alice', 'root'), run: http1('GET', '/v1/leases') },
    { name: 'CVE-2023-32082: a lease time-to-live lists keys the caller may not read', expected: allowed('alice', 'root'),
      run: async (who) => httpOutcome(await http(who, 'GET', `/v1/leases/${appLease}`)) },
    { name: 'lease revoke deletes keys under /app/', expected: allowed('alice', 'root'), run: async (who) => {
      const lease = (await must(http('root', 'POST', '/v1/leases', JSON.stringify({ ttl: 60 })))).json.id as number;
      await must(http('root', 'PUT', `/v1/kv/app/rv-${fresh()}`, 'v', { 'lease-id': String(lease) }));
      return httpOutcome(await http(who, 'DELETE', `/v1/leases/${lease}`));
    } },
    { name: 'CVE-2026-44283: attaching a lease needs the lease operation (bob may write /wo/, not use leases)', expected: allowed('root'),
      run: async (who) => {
        const lease = (await must(http('root', 'POST', '/v1/leases', JSON.stringify({ ttl: 60 })))).json.id as number;
        return httpOutcome(await http(who, 'PUT', '/v1/kv/wo/attached', 'v', { 'lease-id': String(lease) }));
      } },
    { name: 'a write-only principal writes', expected: allowed('bob', 'root'), run: http1('PUT', '/v1/kv/wo/k', 'v') },
    { name: 'lock acquire and release (app)', expected: allowed('alice', 'root'), run: async (who) => {
      const got = await http(who, 'POST', '/v1/locks/app/acquire', JSON.stringify({ lease: appLease, owner: who, waitMs: 0 }));
      if (got.status === 200) await must(http(who, 'POST', '/v1/locks/app/release', JSON.stringify({ key: got.json.key })));
      return httpOutcome(got);
    } },
    { name: 'lock state (app)', expected: allowed('alice', 'root'), run: http1('GET', '/v1/locks/app') },
    { name: 'fencing check (app)', expected: allowed('alice', 'root'), run: http1('POST', '/v1/fencing/check', { lock: 'app', token: 1 }) },
    { name: 'campaign and resign (app)', expected: allowed('alice', 'root'), run: async (who) => {
      const won = await http(who, 'POST', '/v1/elections/app/campaign', JSON.stringify({ lease: appLease, value: who, waitMs: 0 }));
      if (won.status === 200) await must(http(who, 'POST', '/v1/elections/app/resign', JSON.stringify({ key: won.json.key })));
      return httpOutcome(won);
    } },
    { name: 'election leader (app)', expected: allowed('alice', 'root'), run: http1('GET', '/v1/elections/app/leader') },
    { name: 'election observe (app)', expected: allowed('alice', 'root'), run: http1('GET', '/v1/elections/app/observe') },
    { name: 'watch /app/', expected: allowed('alice', 'root'), run: http1('GET', '/v1/watch?key=/app/&prefix=true') },
    { name: 'GHSA-xg4h-6gfc-h4m8: a watch wider than the permitted prefix', expected: allowed('root'), run: http1('GET', '/v1/watch?key=/ap&prefix=true') },
    { name: 'cluster status', expected: allowed('bob', 'alice', 'root'), run: http1('GET', '/v1/cluster/status') },
    { name: 'member list', expected: allowed('bob', 'alice', 'root'), run: http1('GET', '/v1/cluster/members') },
    { name: 'member add (a bad body: refused after the check)', expected: { ...allowed(), root: 'not denied' },
      run: http1('POST', '/v1/cluster/members', { name: 'x' }) },
    { name: 'leader transfer to itself', expected: { ...allowed(), root: 'not denied' }, run: http1('POST', '/v1/cluster/leader', { to: leader }) },
    { name: 'compact', expected: allowed('root'), run: http1('POST', '/v1/maintenance/compact', { revision: 1 }) },
    { name: 'hashkv', expected: allowed('root'), run: http1('GET', '/v1/maintenance/hashkv') },
    { name: 'snapshot', expected: allowed('root'), run: http1('GET', '/v1/maintenance/snapshot') },
    { name: 'policy read', expected: allowed('root'), run: http1('GET', '/v1/auth/policy') },
    { name: 'policy change (a stale version: refused after the check)', expected: { ...allowed(), root: 'not denied' },
      run: http1('PUT', '/v1/auth/policy', policy, { 'if-version': '0' }) },
    { name: 'health and metrics stay open', expected: allowed(...everyone), run: http1('GET', '/readyz') },
  ]);
});

test('the stream: every frame kind as every principal', async () => {
  const frame = (body: Record<string, unknown>) => (who: Who) => streamFrame(who, body);
  await runMatrix([
    { name: 'put', expected: allowed('alice', 'root'), run: frame({ type: 'put', key: '/app/s', value: 'v' }) },
    { name: 'get', expected: allowed('alice', 'root'), run: frame({ type: 'get', key: '/app/x' }) },
    { name: 'get another prefix', expected: allowed('bob', 'root'), run: frame({ type: 'get', key: '/other/secret' }) },
    { name: 'delete', expected: allowed('alice', 'root'), run: frame({ type: 'delete', key: '/app/s' }) },
    { name: 'txn with a compare elsewhere', expected: allowed('root'),
      run: frame({ type: 'txn', compare: [{ key: '/other/secret', target: 'version', op: '>', value: 0 }], success: [{ put: { key: '/app/s', value: 'v' } }] }) },
    { name: 'keepalive', expected: allowed('alice', 'root'), run: frame({ type: 'keepalive', ids: [appLease] }) },
    { name: 'lock state', expected: allowed('alice', 'root'), run: frame({ type: 'lockState', name: 'app' }) },
    { name: 'fencing check', expected: allowed('alice', 'root'), run: frame({ type: 'fencingCheck', lock: 'app', token: 1 }) },
    { name: 'election leader', expected: allowed('alice', 'root'), run: frame({ type: 'leader', name: 'app' }) },
    { name: 'watch /app/', expected: allowed('alice', 'root'), run: frame({ type: 'watch', key: '/app/', prefix: true }) },
    { name: 'watch /other/', expected: allowed('bob', 'root'), run: frame({ type: 'watch', key: '/other/', prefix: true }) },
  ]);
});

test('the etcd gRPC facade through etcdctl: every command group as every principal', { skip: etcdctl === null ? 'no etcdctl (apt-get install etcd-client)' : false }, async () => {
  const as = (...args: string[]) => (who: Who) => ctl(who, args);
  await runMatrix([
    // An etcd key is the Baton key without its leading '/' (src/api/grpc/keys.ts): etcd's app/x is /app/x.
    { name: 'put', expected: allowed('alice', 'root'), run: as('put', 'app/g', 'v') },
    { name: 'get', expected: allowed('alice', 'root'), run: as('get', 'app/x') },
    { name: 'get --prefix ap (wider than app/)', expected: allowed('root'), run: as('get', '--prefix', 'ap') },
    { name: 'get the range [app/, app0): exactly the prefix', expected: allowed('alice', 'root'), run: as('get', 'app/', 'app0') },
    { name: 'get the range [app/, apq): wider', expected: allowed('root'), run: as('get', 'app/', 'apq') },
    { name: 'del', expected: allowed('alice', 'root'), run: as('del', 'app/g') },
    { name: 'CVE-2026-44283: put --prev-kv by a write-only principal reveals the old value', expected: allowed('root'), run: as('put', '--prev-kv', 'wo/k', 'v') },
    { name: 'put by a write-only principal', expected: allowed('bob', 'root'), run: as('put', 'wo/k', 'v') },
    { name: 'txn with a compare elsewhere', expected: allowed('root'),
      run: (who) => ctl(who, ['txn'], 'value("other/secret") = "v0"\n\nput app/t v\n\n\n') },
    { name: 'lease grant', expected: allowed('alice', 'root'), run: as('lease', 'grant', '60') },
    { name: 'lease list', expected: allowed('alice', 'root'), run: as('lease', 'list') },
    { name: 'lease timetolive (no keys)', expected: allowed('alice', 'root'), run: (who) => ctl(who, ['lease', 'timetolive', appLease.toString(16)]) },
    { name: 'CVE-2023-32082: lease timetolive --keys', expected: allowed('alice', 'root'), run: (who) => ctl(who, ['lease', 'timetolive', appLease.toString(16), '--keys']) },
    // etcdctl's lock and elect are etcd's client-side recipes (a txn, a sorted range and a watch on
    // the prefix NAME/), so they need read, write and watch there, as on etcd; app/lk/ is alice's.
    { name: 'lock app/lk (the client recipe)', expected: allowed('alice', 'root'), run: as('lock', 'app/lk', 'true') },
    { name: 'elect app/el (the client recipe)', expected: allowed('alice', 'root'), run: async (who) => {
      // etcdctl elect campaigns, prints the leader key and holds it until it is stopped.
      // One election per principal: a killed campaigner leads until its lease expires.
      const run = await etcdctlRun(who, ['elect', `app/el-${who}`, who], { timeoutMs: 3_000 });
      if (/permission denied/.test(run.said)) return 'denied';
      return run.said.includes(`app/el-${who}/`) ? 'ok' : `other: ${run.status} ${run.said.trim().slice(0, 160)}`;
    } },
    { name: 'watch --prefix app/', expected: allowed('alice', 'root'), run: (who) => watching(who, ['watch', '--prefix', 'app/']) },
    { name: 'GHSA-xg4h-6gfc-h4m8: watch --prefix ap (past the permitted prefix)', expected: allowed('root'), run: (who) => watching(who, ['watch', '--prefix', 'ap']) },
    { name: 'watch the range [app/x, app/z) inside the prefix', expected: allowed('alice', 'root'), run: (who) => watching(who, ['watch', 'app/x', 'app/z']) },
    { name: 'member list', expected: allowed('bob', 'alice', 'root'), run: as('member', 'list') },
    { name: 'endpoint status', expected: allowed('bob', 'alice', 'root'), run: as('endpoint', 'status') },
    { name: 'GHSA-q8m4-xhhv-38mg: endpoint hashkv', expected: allowed('root'), run: as('endpoint', 'hashkv') },
    { name: 'GHSA-q8m4-xhhv-38mg: alarm list', expected: allowed('root'), run: as('alarm', 'list') },
    { name: 'GHSA-q8m4-xhhv-38mg: defrag', expected: allowed('root'), run: as('defrag') },
    { name: 'compaction (revision 1 is compacted already: refused after the check)', expected: { ...allowed(), root: 'not denied' }, run: as('compaction', '1') },
    { name: 'snapshot save', expected: allowed('root'), run: (who) => ctl(who, ['snapshot', 'save', `${cell.dataDir}/snap-${who}-${fresh()}.db`]) },
    { name: 'member remove of no member (refused after the check)', expected: { ...allowed(), root: 'not denied' }, run: as('member', 'remove', '1234abcd') },
  ]);
});

test('the JSON gateway: the same decisions over HTTP/JSON', async () => {
  const call = (path: string, body: unknown) => async (who: Who) => httpOutcome(await gateway(who, path, body));
  await runMatrix([
    { name: '/v3/kv/put', expected: allowed('alice', 'root'), run: call('/v3/kv/put', { key: b64('app/gw'), value: b64('v') }) },
    { name: '/v3/kv/range', expected: allowed('alice', 'root'), run: call('/v3/kv/range', { key: b64('app/x') }) },
    { name: '/v3/kv/range wider than app/', expected: allowed('root'), run: call('/v3/kv/range', { key: b64('app/'), range_end: b64('apq') }) },
    { name: '/v3/kv/deleterange', expected: allowed('alice', 'root'), run: call('/v3/kv/deleterange', { key: b64('app/gw') }) },
    { name: '/v3/kv/txn with a compare elsewhere', expected: allowed('root'),
      run: call('/v3/kv/txn', { compare: [{ key: b64('other/secret'), target: 'VERSION', result: 'GREATER', version: '0' }], success: [{ request_put: { key: b64('app/gw'), value: b64('v') } }] }) },
    { name: '/v3/lease/grant', expected: allowed('alice', 'root'), run: call('/v3/lease/grant', { TTL: '60' }) },
    { name: '/v3/lease/timetolive with keys', expected: allowed('alice', 'root'), run: call('/v3/lease/timetolive', { ID: String(appLease), keys: true }) },
    { name: '/v3/lease/timetolive without keys', expected: allowed('alice', 'root'), run: call('/v3/lease/timetolive', { ID: String(appLease) }) },
    { name: '/v3/cluster/member/list', expected: allowed('bob', 'alice', 'root'), run: call('/v3/cluster/member/list', {}) },
    { name: '/v3/maintenance/status', expected: allowed('bob', 'alice', 'root'), run: call('/v3/maintenance/status', {}) },
    { name: '/v3/maintenance/hash', expected: allowed('root'), run: call('/v3/maintenance/hash', {}) },
    { name: '/v3/kv/compaction (revision 1 is compacted already)', expected: { ...allowed(), root: 'not denied' }, run: call('/v3/kv/compaction', { revision: '1' }) },
    { name: '/v3/lock/lock and /v3/lock/unlock (app: the Lock service)', expected: allowed('alice', 'root'), run: async (who) => {
      const locked = await gateway(who, '/v3/lock/lock', { name: b64('app'), lease: String(appLease) });
      if (locked.status === 200) await must(gateway(who, '/v3/lock/unlock', { key: locked.json['key'] }));
      return httpOutcome(locked);
    } },
    { name: '/v3/election/leader (app)', expected: allowed('alice', 'root'), run: async (who) => {
      const answer = await gateway(who, '/v3/election/leader', { name: b64('app') });
      // No leader now: etcd answers "election: no leader", which is not a denial.
      return answer.status !== 403 && /no leader/.test(answer.text) ? 'ok' : httpOutcome(answer);
    } },
  ]);
});

// ---------------------------------------------------------------------------------------------
// Degraded and changing states.

test('with no leader, denials still come first and say nothing else', async () => {
  const leader = (await must(http('root', 'GET', '/v1/cluster/status'))).json['leader'] as number;
  const members = (await must(http('root', 'GET', '/v1/cluster/members'))).json['members'] as { id: number; name: string }[];
  const survivor = members.find((m) => m.id !== leader)?.name as string;
  const others = cell.names.filter((name) => name !== survivor);
  for (const name of others) cell.cell.signal(name, 'SIGSTOP');
  try {
    await sleep(1_500); // past the election timeout: the survivor knows it has no leader
    const deviations: string[] = [];
    const check = async (what: string, who: Who, run: Promise<Answer>, expected: Expected): Promise<void> => {
      const outcome = httpOutcome(await run);
      if (!meets(outcome, expected)) deviations.push(`${what} as ${who}: expected ${expected}, got ${outcome}`);
    };
    for (const who of everyone) {
      const alice = who === 'alice' || who === 'root';
      await check('put /app/k', who, http(who, 'PUT', '/v1/kv/app/k', 'v', {}, survivor), alice ? 'not denied' : 'denied');
      await check('linearizable get /app/x', who, http(who, 'GET', '/v1/kv/app/x', undefined, {}, survivor), alice ? 'not denied' : 'denied');
      await check('lease grant', who, http(who, 'POST', '/v1/leases', JSON.stringify({ ttl: 60 }), {}, survivor), alice ? 'not denied' : 'denied');
      await check('lock acquire', who, http(who, 'POST', '/v1/locks/app/acquire', JSON.stringify({ lease: appLease, waitMs: 0 }), {}, survivor), alice ? 'not denied' : 'denied');
      await check('compact', who, http(who, 'POST', '/v1/maintenance/compact', JSON.stringify({ revision: 1 }), {}, survivor), who === 'root' ? 'not denied' : 'denied');
    }
    assert.deepEqual(deviations, []);
  } finally {
    for (const name of others) cell.cell.signal(name, 'SIGCONT');
  }
  await cell.cell.waitReady(30_000);
});

test('a permission removed is refused on every member within 1 s, and an open watch ends at once', async () => {
  // alice watches /app/ on n2 (SSE), then root takes her write and watch permissions away.
  const events: string[] = [];
  const client = certs.get('alice') as CertFiles;
  const watch = request(`${cell.cell.clientUrl('n2')}/v1/watch?key=/app/&prefix=true`, {
    ca: readFileSync(tls.ca.cert), cert: readFileSync(client.cert), key: readFileSync(client.key),
  }, (res) => res.on('data', (chunk: Buffer) => events.push(chunk.toString('utf8'))));
  watch.on('error', () => undefined);
  watch.end();
  // A watch from now announces its start; a put before that could fall before the watch began.
  for (let i = 0; i < 250 && events.length === 0; i++) await sleep(20);
  assert.ok(events.length > 0, 'the watch announced its start');
  await must(http('root', 'PUT', '/v1/kv/app/seen', 'before'));
  const delivered = (): boolean => {
    const text = events.join('');
    return text.includes('before') || text.includes(Buffer.from('before').toString('base64'));
  };
  for (let i = 0; i < 250 && !delivered(); i++) await sleep(20);
  assert.ok(delivered(), 'the watch delivered before the change');
  const current = (await must(http('root', 'GET', '/v1/auth/policy'))).json.version as number;
  const reduced = { ...policy, roles: { ...policy.roles, app: [{ prefix: '/app/', ops: ['read'] }] } };
  await must(http('root', 'PUT', '/v1/auth/policy', JSON.stringify(reduced), { 'if-version': String(current) }));
  const tookMs = await waitEveryMember((name) => http('alice', 'PUT', '/v1/kv/app/k', 'v', {}, name), 'denied', 1_000);
  assert.ok(tookMs <= 1_000, `refused everywhere after ${tookMs.toFixed(0)} ms`);
  // Reads stay allowed (the permission that was kept).
  assert.equal(httpOutcome(await http('alice', 'GET', '/v1/kv/app/x', undefined, {}, 'n3')), 'ok');
  await must(http('root', 'PUT', '/v1/kv/app/seen', 'after'));
  for (let i = 0; i < 100 && !events.join('').includes('permission_denied'); i++) await sleep(20);
  const text = events.join('');
  assert.match(text, /permission_denied/, 'the watch ended with permission_denied');
  assert.ok(!text.includes(Buffer.from('after').toString('base64')) && !/"after"/.test(text), 'no event after the removal reached alice');
  watch.destroy();
  // Restore the matrix policy for any later test.
  const now = (await must(http('root', 'GET', '/v1/auth/policy'))).json.version as number;
  await must(http('root', 'PUT', '/v1/auth/policy', JSON.stringify(policy), { 'if-version': String(now) }));
  assert.ok(now > policyVersion);
});
