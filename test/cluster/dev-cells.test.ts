// `baton dev --cells 2` as a user runs it: a control plane, two data cells of 3 processes and a
// router come up and print one ready line naming the router and every cell; a namespace created
// through the router lands a key on its cell; SIGTERM stops everything with exit 0. With --secure
// (issues 24/25) every listener is TLS under one CA: the CLI's put/get, ns create/move and etcdctl
// through the https:// router with the printed files work, and a client without a certificate
// gets nothing.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { baton, cliPath } from './cli-run.js';
import { findEtcdctl } from './etcdctl-path.js';
import { promisify } from 'node:util';
import { httpsRequest } from '../../src/node/testing/cell-tls.js';
import { http } from './harness.js';
import { findChromium, HeadlessBrowser } from './headless-browser.js';

const scratch = mkdtempSync(join(tmpdir(), 'baton-dev-cells-'));
let child: ChildProcess | null = null;
/** Every `baton dev` started, so a failed test leaves none running. */
const startedAll: ChildProcess[] = [];
after(async () => {
  for (const one of startedAll) {
    if (one.exitCode !== null || one.signalCode !== null) continue;
    one.kill('SIGTERM');
    await new Promise((resolve) => one.once('exit', resolve));
  }
  rmSync(scratch, { recursive: true, force: true });
});

/** Starts `baton dev --cells 2` on a base port; resolves with its ready line, or null if a port was taken. */
function startDev(basePort: number, extraArgs: readonly string[] = [], printed: string[] = []): Promise<string | null> {
  const started = spawn(process.execPath, [cliPath, 'dev', '--cells', '2', '--base-port', String(basePort), '--data-dir', join(scratch, `${basePort}-${startedAll.length}`), ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child = started;
  startedAll.push(started);
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line in 120 s:\n${out}\n${err.slice(-2000)}`)), 120_000);
    started.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    started.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      printed.splice(0, printed.length, out);
      const line = out.split('\n').find((l) => l.startsWith('Baton dev cells ready:'));
      if (line !== undefined) {
        clearTimeout(timer);
        resolve(line);
      }
    });
    started.once('exit', (code) => {
      clearTimeout(timer);
      // A port taken by another test between the pick and the bind: try another base.
      if (/already in use/.test(err)) resolve(null);
      else reject(new Error(`baton dev exited ${code}:\n${err.slice(-2000)}`));
    });
  });
}

/** `baton dev --cells 2 ARGS` on free ports: its ready line, base port and what it printed so far. */
async function startDevSomewhere(extraArgs: readonly string[] = []): Promise<{ line: string | null; base: number; printed: string[] }> {
  let line: string | null = null;
  let base = 0;
  const printed: string[] = [];
  for (let attempt = 0; attempt < 4 && line === null; attempt++) {
    // Below the kernel's ephemeral range (32768 and up, where outbound connections take their
    // ports: CI saw 36032 taken); a dev run spans base .. base + 233.
    base = 20_000 + 1_000 * Math.floor(Math.random() * 12);
    line = await startDev(base, extraArgs, printed);
  }
  return { line, base, printed };
}

test('baton dev --cells 2: one ready line, a working router, a clean stop', { timeout: 240_000 }, async () => {
  const { line, base } = await startDevSomewhere();
  assert.ok(line !== null, 'found free ports');
  const router = `http://127.0.0.1:${base}`;
  assert.match(line, new RegExp(`^Baton dev cells ready: router ${router} control=\\S+ cell-1=\\S+ cell-2=\\S+$`));
  const cell2 = /cell-2=(\S+)/.exec(line)?.[1]?.split(',') ?? [];
  assert.equal(cell2.length, 3);
  const created = await http(`${router}/v1/control/namespaces`, { method: 'POST', body: JSON.stringify({ prefix: '/dev/', cell: 'cell-2' }), headers: { 'content-type': 'application/json' } });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  let put;
  for (let i = 0; i < 50; i++) {
    put = await http(`${router}/v1/kv/dev/k`, { method: 'PUT', body: 'v' });
    if (put.headers.get('baton-cell') === 'cell-2') break;
    await new Promise((r) => setTimeout(r, 100)); // the router learns the namespace through its watch
  }
  assert.equal(put?.headers.get('baton-cell'), 'cell-2');
  assert.equal((await http(`${cell2[0]}/v1/kv/dev/k`)).body.kvs[0].value, 'v');
  const status = await http(`${router}/v1/cluster/status`);
  assert.deepEqual(status.body.cells.map((c: { id: string }) => c.id), ['cell-1', 'cell-2']);
  await routerConsole(router);
  const running = child as ChildProcess;
  running.kill('SIGTERM');
  const code = await new Promise((resolve) => running.once('exit', resolve));
  assert.equal(code, 0);
  await assert.rejects(http(`${cell2[0]}/healthz`, { timeoutMs: 2_000 }), 'the cells stopped with it');
});

/**
 * The router serves the web console too (docs/console.md): its files with their headers, none
 * outside the folder, and (in headless chromium, when there is one) a page that shows the cells
 * and namespaces and reads a namespace's keys through the router.
 */
async function routerConsole(router: string): Promise<void> {
  const page = await http(`${router}/ui/`);
  assert.equal(page.status, 200);
  assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'/);
  assert.equal((await http(`${router}/ui/..%2f..%2fpackage.json`)).status, 400);
  const chromium = findChromium();
  if (chromium === null) return;
  const browser = await HeadlessBrowser.launch(chromium);
  try {
    await browser.open(`${router}/ui/`);
    await browser.waitFor<boolean>(`document.querySelector('tr[data-cell="cell-2"]') !== null && document.querySelector('tr[data-namespace="/dev/"]')?.textContent.includes('cell-2') === true`, 15_000);
    await browser.evaluate(`(() => {
      document.getElementById('keys-prefix').value = '/dev/';
      document.getElementById('keys-form').requestSubmit();
    })()`);
    await browser.waitFor<boolean>(`document.querySelector('tr[data-key="/dev/k"]') !== null`, 10_000);
    // Quota per tenant through the router: every cell of the map is asked (Baton-Cell), so a tenant
    // of cell-2 shows with its cell and its use follows a write routed to that cell.
    const tenant = await http(`${router}/v1/tenants/devteam`, { method: 'PUT', headers: { 'baton-cell': 'cell-2' }, body: JSON.stringify({ prefixes: ['/dev/'], limits: { maxKeys: 100 } }) });
    assert.equal(tenant.status, 200, JSON.stringify(tenant.body));
    await browser.waitFor<boolean>(`document.querySelector('tr[data-tenant="devteam"][data-tenant-cell="cell-2"]')?.children[3].textContent === '1 / 100 (1.0 %)'`, 10_000);
    assert.equal((await http(`${router}/v1/kv/dev/k2`, { method: 'PUT', body: 'v2' })).headers.get('baton-cell'), 'cell-2');
    await browser.waitFor<boolean>(`document.querySelector('tr[data-tenant="devteam"][data-tenant-cell="cell-2"]')?.children[3].textContent === '2 / 100 (2.0 %)'`, 10_000);
    assert.equal(await browser.evaluate<number>(`document.querySelectorAll('tr[data-tenant-cell="cell-1"]').length`), 0);
    const artifacts = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'test-artifacts', 'console');
    mkdirSync(artifacts, { recursive: true });
    writeFileSync(join(artifacts, 'console-router.png'), await browser.screenshot());
    // Through the router, views whose prefix spans cells show cross_cell; nothing else may go wrong.
    const unexpected = browser.problems.filter((problem) => problem.kind !== 'log' || !/status of 400/.test(problem.text));
    assert.deepEqual(unexpected, []);
  } finally {
    await browser.close();
  }
}

test('baton dev --cells 2 --secure: TLS everywhere under one CA; the CLI and etcdctl through the https:// router', { timeout: 240_000 }, async () => {
  const { line, base, printed } = await startDevSomewhere(['--secure']);
  assert.ok(line !== null, 'found free ports');
  const router = `https://127.0.0.1:${base}`;
  assert.match(line, new RegExp(`^Baton dev cells ready: router ${router} control=https://\\S+ cell-1=https://\\S+ cell-2=https://\\S+$`));
  // The files a user needs, as printed (the CA, the root principal's certificate and key).
  await new Promise((resolve) => setTimeout(resolve, 200));
  const howTo = /baton put \/hello world --endpoints (\S+) --cacert (\S+) --cert (\S+) --key (\S+)/.exec(printed.join(''));
  assert.ok(howTo !== null, `the TLS files are printed:\n${printed.join('')}`);
  const [, endpoint, cacert, cert, key] = howTo as unknown as [string, string, string, string, string];
  assert.equal(endpoint, router);
  const as = ['--endpoints', router, '--cacert', cacert, '--cert', cert, '--key', key];
  const ok = async (args: string[]): Promise<string> => {
    const run = await baton([...args, ...as]);
    assert.equal(run.code, 0, `baton ${args.join(' ')}: ${run.stderr}`);
    return run.stdout;
  };
  await ok(['put', '/hello', 'world']);
  assert.match(await ok(['get', '/hello']), /world/);
  await ok(['ns', 'create', '/sec/', '--cell', 'cell-2']);
  assert.match(await ok(['ns', 'list']), /\/sec\/, cell-2/);
  // The router learns the namespace through its watch of the map.
  for (let i = 0; i < 50 && (await httpsRequest(`${router}/v1/kv/sec/k`, { ca: cacert, client: { cert, key }, method: 'PUT', body: 'v' })).status !== 201; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.match(await ok(['ns', 'move', '/sec/', '--to', 'cell-1', '--wait']), /released/);
  assert.match(await ok(['get', '/sec/k']), /\bv\b/);
  assert.match(await ok(['ns', 'list']), /\/sec\/, cell-1/);
  // Without a certificate, or over plain HTTP, nothing.
  await assert.rejects(httpsRequest(`${router}/v1/kv/hello`, { ca: cacert }));
  assert.notEqual((await baton(['get', '/hello', '--endpoints', router, '--cacert', cacert])).code, 0);
  const etcdctl = findEtcdctl();
  if (etcdctl !== null) {
    const grpc = /router etcd gRPC (\S+)/.exec(printed.join(''))?.[1] as string;
    assert.match(grpc, /^https:/);
    const got = await promisify(execFile)(etcdctl, [`--endpoints=${grpc}`, `--cacert=${cacert}`, `--cert=${cert}`, `--key=${key}`, 'get', 'sec/k', '--print-value-only'], {
      env: { ...process.env, ETCDCTL_API: '3' }, timeout: 15_000,
    });
    assert.equal(got.stdout, 'v\n');
  }
  const running = child as ChildProcess;
  running.kill('SIGTERM');
  assert.equal(await new Promise((resolve) => running.once('exit', resolve)), 0);
});
