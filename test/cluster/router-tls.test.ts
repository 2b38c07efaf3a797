// TLS on the router (issues 24 and 25; docs/security.md "The router"), on real processes and real
// certificates: a control-plane cell and a data cell, both with TLS on every listener and client
// certificates required (one throwaway CA, as `baton dev --secure` makes), and a router in this
// process serving HTTPS with --client-cert-auth, built from the CLI's own flag handling. The
// router reads the cell map over https:// (read and watch), forwards puts and gets to the https://
// cell presenting its own client certificate, learns the cell's leader over https://, and relays
// the stream over wss:// both ways. Plain HTTP to the router, and a client without a certificate,
// get nothing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { ConfigError } from '../../src/base/config-error.js';
import { loadRouterTls, routerTlsFiles } from '../../src/cli/router-command.js';
import { httpsRequest } from '../../src/node/testing/cell-tls.js';
import { Router } from '../../src/router/router.js';
import { RouterGrpc } from '../../src/router-grpc/router-grpc.js';
import { findEtcdctl } from './etcdctl-path.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ensureCa, issueCert, issueClientCert, type CertAuthority, type CertFiles } from '../../src/security/certs.js';
import { freePorts, sleep, startTestCell, type TestCell } from './harness.js';

let dir: string;
let ca: CertAuthority;
let alice: CertFiles;
let control: TestCell;
let cell1: TestCell;
let router: Router;
let routerUrl: string;
let closeTls: () => void = () => {};
/** The router's etcd gRPC relay on the same TLS flags (https://). */
let grpcUrl: string;

/** A request trusting the CA, as alice unless `client` says otherwise (null: no certificate). */
async function call(url: string, method = 'GET', body?: unknown, client: CertFiles | null = alice): Promise<{ status: number; json: any }> {
  const answer = await httpsRequest(url, {
    ca: ca.cert, ...(client === null ? {} : { client }), method,
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  return { status: answer.status, json: answer.body.startsWith('{') ? JSON.parse(answer.body) : answer.body };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-router-tls-'));
  ca = ensureCa(dir);
  alice = issueClientCert(ca, 'alice');
  [control, cell1] = await Promise.all([
    startTestCell({ size: 1, tls: true, tlsCa: ca, extraArgs: ['--cell', 'control', '--control-plane'] }),
    startTestCell({ size: 1, tls: true, tlsCa: ca, grpc: true, extraArgs: ['--cell', 'cell-1'] }),
  ]);
  const controlUrl = control.cell.clientUrls()[0] as string;
  assert.match(controlUrl, /^https:/);
  const added = await call(`${controlUrl}/v1/control/cells`, 'POST', { id: 'cell-1', endpoints: cell1.cell.clientUrls() });
  assert.equal(added.status, 200, JSON.stringify(added.json));
  assert.deepEqual(added.json.pending, [], 'the cell took the map over https');

  // The router: a server certificate for its listener, a client certificate (principal "router")
  // for the cells; both from the CA the cells trust.
  const serving = issueCert(ca, { name: 'router-listener', commonName: 'router', altNames: ['IP:127.0.0.1', 'DNS:localhost'], usage: 'server+client' });
  const asClient = issueClientCert(ca, 'router');
  const [port] = await freePorts(1);
  const listen = new URL(`https://127.0.0.1:${port}`);
  const flags: Record<string, string> = {
    'cert-file': serving.cert, 'key-file': serving.key, 'trusted-ca-file': ca.cert,
    'client-cert-file': asClient.cert, 'client-key-file': asClient.key,
  };
  const loaded = loadRouterTls(routerTlsFiles((name) => flags[name], true, listen), () => {});
  closeTls = loaded.close;
  router = new Router({ control: control.cell.clientUrls(), host: '127.0.0.1', port: port as number, tls: loaded.tls });
  routerUrl = (await router.start()).url;
  assert.match(routerUrl, /^https:/);
  const [grpcPort] = await freePorts(1);
  grpcUrl = (await RouterGrpc.start(router, { host: '127.0.0.1', port: grpcPort as number, ...(loaded.tls.listener === undefined ? {} : { tls: loaded.tls.listener }) })).url;
  assert.match(grpcUrl, /^https:/);
  assert.ok(await router.cache.ready(10_000), 'the router read the cell map from the https:// control plane');
}, { timeout: 60_000 });

after(async () => {
  await router?.stop();
  closeTls();
  await Promise.all([control, cell1].map((cell) => cell?.close()));
  rmSync(dir, { recursive: true, force: true });
});

test('put and get through https://router reach the TLS cell; the router learns its leader over https', { timeout: 20_000 }, async () => {
  const put = await call(`${routerUrl}/v1/kv/tls/a`, 'PUT', 'through');
  assert.equal(put.status, 201, JSON.stringify(put.json));
  const got = await call(`${routerUrl}/v1/kv/tls/a`);
  assert.equal(got.status, 200);
  assert.equal(got.json.kvs[0].value, 'through');
  // On the cell itself (straight, with the client certificate).
  assert.equal((await call(`${cell1.cell.clientUrls()[0]}/v1/kv/tls/a`)).json.kvs[0].value, 'through');
  // The control plane's API through the router, to the https:// control plane.
  const cells = await call(`${routerUrl}/v1/control/cells`);
  assert.equal(cells.status, 200, JSON.stringify(cells.json));
  // The leader refresh (every 2 s) reads the cell's status over https.
  const until = Date.now() + 8_000;
  let leader: string | null = null;
  while (leader === null && Date.now() < until) {
    leader = (await call(`${routerUrl}/v1/cluster/status`)).json.cells.find((c: { id: string }) => c.id === 'cell-1')?.leader ?? null;
    if (leader === null) await sleep(200);
  }
  assert.equal(leader, cell1.cell.clientUrls()[0]);
});

test('the stream through wss://router: frames relayed to the cell over wss://', { timeout: 20_000 }, async () => {
  const ws = new WebSocket(`${routerUrl.replace(/^https/, 'wss')}/v1/stream`, {
    perMessageDeflate: false, ca: readFileSync(ca.cert), cert: readFileSync(alice.cert), key: readFileSync(alice.key),
  });
  const frames: any[] = [];
  ws.on('message', (data) => {
    frames.push(JSON.parse(String(data)));
  });
  const next = (id: number): Promise<any> => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer to ${id}: ${JSON.stringify(frames)}`)), 10_000);
    const look = (): void => {
      const found = frames.find((f) => f.id === id);
      if (found !== undefined) {
        clearTimeout(timer);
        ws.off('message', look);
        resolve(found);
      }
    };
    ws.on('message', look);
    look();
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  try {
    const putAnswer = next(1);
    ws.send(JSON.stringify({ id: 1, type: 'put', key: '/tls/stream', value: 'framed' }));
    assert.equal((await putAnswer).type, 'result', JSON.stringify(frames));
    const getAnswer = next(2);
    ws.send(JSON.stringify({ id: 2, type: 'get', key: '/tls/a' }));
    const got = await getAnswer;
    assert.equal(got.type, 'result', JSON.stringify(got));
    assert.equal(got.result.kvs[0].value, 'through');
  } finally {
    ws.close();
  }
  assert.equal((await call(`${cell1.cell.clientUrls()[0]}/v1/kv/tls/stream`)).json.kvs[0].value, 'framed', 'the frame landed on the cell');
});

test('plain HTTP to the TLS router, and a client without a certificate, get nothing', { timeout: 20_000 }, async () => {
  const plain = routerUrl.replace('https:', 'http:');
  const answer = await fetch(`${plain}/v1/kv/tls/a`, { signal: AbortSignal.timeout(3_000) }).then((r) => r.status, () => 0);
  assert.ok(answer === 0 || answer >= 400, `plain HTTP got ${answer}`);
  await assert.rejects(call(`${routerUrl}/v1/kv/tls/a`, 'GET', undefined, null), 'no client certificate: the handshake fails');
  // Another CA's certificate is refused too.
  const other = ensureCa(join(dir, 'other'));
  await assert.rejects(call(`${routerUrl}/v1/kv/tls/a`, 'GET', undefined, issueClientCert(other, 'mallory')));
  // Nor does a wss:// stream open without a certificate.
  const ws = new WebSocket(`${routerUrl.replace(/^https/, 'wss')}/v1/stream`, { perMessageDeflate: false, ca: readFileSync(ca.cert) });
  const opened = await new Promise<boolean>((resolve) => {
    ws.once('open', () => resolve(true));
    ws.once('error', () => resolve(false));
  });
  ws.terminate();
  assert.equal(opened, false);
});

test('a half-configured router does not start: the message names what is missing', () => {
  const https = new URL('https://127.0.0.1:1');
  const http = new URL('http://127.0.0.1:1');
  const files = (flags: Record<string, string>, auth: boolean, listen: URL): unknown => routerTlsFiles((name) => flags[name], auth, listen);
  assert.throws(() => files({}, false, https), (e: Error) => e instanceof ConfigError && /https:\/\/ --listen needs --cert-file/.test(e.message));
  assert.throws(() => files({ 'cert-file': 'c', 'key-file': 'k' }, false, http), /--listen as https/);
  assert.throws(() => files({ 'cert-file': 'c' }, false, https), /--cert-file and --key-file go together/);
  assert.throws(() => files({ 'cert-file': 'c', 'key-file': 'k' }, true, https), /--client-cert-auth needs --trusted-ca-file/);
  assert.throws(() => files({ 'client-cert-file': 'c' }, false, http), /--client-cert-file and --client-key-file go together/);
  assert.throws(() => files({ 'trusted-ca-file': 'ca' }, false, http), /need --cert-file/);
  // The upstream side defaults to the listener's certificate and CA; --upstream-ca-file alone is a plain router reaching https cells.
  assert.deepEqual(files({ 'cert-file': 'c', 'key-file': 'k', 'trusted-ca-file': 'ca' }, false, https), {
    listener: { certFile: 'c', keyFile: 'k', caFile: 'ca', clientCertAuth: false },
    upstream: { certFile: 'c', keyFile: 'k', caFile: 'ca' },
  });
  assert.deepEqual(files({ 'upstream-ca-file': 'u' }, false, http), { listener: null, upstream: { caFile: 'u' } });
});

const etcdctlPath = findEtcdctl();
test('etcd gRPC through the TLS router: etcdctl with a client certificate, relayed to the https:// facade', { skip: etcdctlPath === null ? 'etcdctl not installed' : false, timeout: 30_000 }, async () => {
  const ctl = (args: string[], client: CertFiles | null = alice) => promisify(execFile)(etcdctlPath as string, [
    `--endpoints=${grpcUrl}`, '--command-timeout=5s', `--cacert=${ca.cert}`,
    ...(client === null ? [] : [`--cert=${client.cert}`, `--key=${client.key}`]), ...args,
  ], { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 15_000 });
  assert.equal((await ctl(['put', 'tls/grpc', 'relayed'])).stdout.trim(), 'OK');
  assert.equal((await ctl(['get', 'tls/grpc', '--print-value-only'])).stdout, 'relayed\n');
  // On the cell itself: the router reached its https:// facade with the router's certificate.
  assert.equal((await call(`${cell1.cell.clientUrls()[0]}/v1/kv/tls/grpc`)).json.kvs[0].value, 'relayed');
  // --client-cert-auth: no certificate, no call.
  await assert.rejects(ctl(['get', 'tls/grpc'], null));
});
