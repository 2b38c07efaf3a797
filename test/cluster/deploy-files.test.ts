// The service files of deploy/ (issue 30), checked with what can run here (no Docker engine, no
// Kubernetes cluster, no systemd as PID 1 on this machine):
// - the systemd unit passes `systemd-analyze verify` with no warning, and its Type=notify promise
//   holds: READY=1 reaches NOTIFY_SOCKET only once the member serves (not while it has no quorum),
//   STOPPING=1 when it stops;
// - the image's entry point (tini -- node dist/src/cli/main.js server) runs a cell from exactly the
//   environment docker-compose.yml gives each member (host names and ports mapped to loopback),
//   and the image's HEALTHCHECK command answers healthy against it;
// - the Kubernetes manifests: every member's settings parse as `baton server`'s, and the
//   properties the docs promise are there (headless peers service, anti-affinity, PDB
//   maxUnavailable 1, /readyz readiness, volumes, a grace period above the stop bound, no hook
//   that removes a member on stop).
import { after, afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatonClient } from '../../src/client/index.js';
import { stopBoundMs } from '../../src/base/limits.js';
import { cliPath } from './cli-run.js';
import { freePorts, http, sleep, within } from './harness.js';
import { checkStatefulCell, yamlDocuments, yamlUnavailable } from './k8s-checks.js';

const root = join(cliPath, '..', '..', '..', '..');
const deploy = join(root, 'deploy');
const scratch = mkdtempSync(join(tmpdir(), 'baton-deploy-'));
const children: ChildProcess[] = [];

/** Kills the members a test started, at its end: left running, they keep this file alive. */
async function killChildren(): Promise<void> {
  const running = children.splice(0).filter((child) => child.exitCode === null && child.signalCode === null);
  await Promise.all(running.map((child) => new Promise((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGKILL');
  })));
}

afterEach(killChildren);
after(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function has(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function spawnNode(env: Record<string, string>, args: readonly string[] = []): { child: ChildProcess; log: string[] } {
  const log: string[] = [];
  const child = spawn(process.execPath, [cliPath, 'server', ...args], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (chunk: Buffer) => log.push(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => log.push(chunk.toString()));
  children.push(child);
  return { child, log };
}

async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(100);
  }
}

test('systemd: the unit verifies clean', { skip: has('systemd-analyze') ? false : 'systemd-analyze is not installed' }, () => {
  // verify checks that ExecStart's program exists: point it at this build's CLI.
  const unit = readFileSync(join(deploy, 'systemd', 'baton.service'), 'utf8').replace('/usr/local/bin/baton', cliPath);
  const file = join(scratch, 'baton.service');
  writeFileSync(file, unit);
  let output = '';
  try {
    output = execFileSync('systemd-analyze', ['verify', file], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
  } catch (error) {
    assert.fail(`systemd-analyze verify failed: ${String((error as { stderr?: Buffer }).stderr ?? error)}`);
  }
  assert.equal(output.trim(), '');
  assert.match(unit, /^Type=notify$/m);
  const stopSec = Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1]);
  assert.ok(stopSec * 1000 > stopBoundMs, `TimeoutStopSec ${stopSec} s must exceed the server's own stop bound`);
});

test('systemd: READY=1 only once the member serves (not without a quorum), STOPPING=1 on SIGTERM',
  { timeout: 120_000, skip: has('systemd-notify') && has('python3') ? false : 'systemd-notify or python3 is not installed' }, async () => {
    const socket = join(scratch, 'notify.sock');
    // The service manager's side: a Unix datagram socket, each message printed as one JSON line.
    const receiver = spawn('python3', ['-c', [
      'import json,os,socket,sys',
      's=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM); s.bind(sys.argv[1]); print("bound",flush=True)',
      'while True: print(json.dumps(s.recv(4096).decode()),flush=True)',
    ].join('\n'), socket], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(receiver);
    const messages: string[] = [];
    receiver.stdout!.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line.startsWith('"')) messages.push(JSON.parse(line) as string);
    });
    await waitFor('the notify socket', () => existsSocket(socket), 5_000);

    const [c1, c2, p1, p2] = await freePorts(4) as [number, number, number, number];
    const cluster = `n1=http://127.0.0.1:${p1},n2=http://127.0.0.1:${p2}`;
    const clients = `n1=http://127.0.0.1:${c1},n2=http://127.0.0.1:${c2}`;
    const node = (name: string, client: number, peer: number, env: Record<string, string>) => spawnNode(env, [
      '--name', name, '--data-dir', join(scratch, name), '--listen-client', `http://127.0.0.1:${client}`,
      '--listen-peer', `http://127.0.0.1:${peer}`, '--initial-cluster', cluster, '--initial-cluster-clients', clients,
      '--tick-ms', '50', '--election-ticks', '10']);
    const n1 = node('n1', c1, p1, { NOTIFY_SOCKET: socket });
    // Alone, n1 has no quorum: it listens but does not serve, and says nothing.
    await waitFor('n1 listening', async () => (await http(`http://127.0.0.1:${c1}/livez`, { timeoutMs: 500 }).catch(() => null)) !== null, 15_000);
    await sleep(2_000);
    assert.equal(messages.length, 0, `said before the member could serve: ${messages.join(' | ')}`);
    node('n2', c2, p2, {});
    await waitFor('READY=1', () => messages.some((m) => m.includes('READY=1')), 20_000);
    const read = await http(`http://127.0.0.1:${c1}/v1/kv/x`);
    assert.ok(read.status === 404 || read.status === 200, 'ready means it serves a linearizable read');
    // Listen for the exit before the signal: the stop may be over before STOPPING=1 is read.
    const exited = new Promise((resolve) => n1.child.once('exit', (code) => resolve(code)));
    n1.child.kill('SIGTERM');
    await waitFor('STOPPING=1', () => messages.some((m) => m.includes('STOPPING=1')), 10_000);
    assert.equal(await within(exited, 35_000, () => 'still running'), 0);
  });

function existsSocket(path: string): boolean {
  try {
    execFileSync('test', ['-S', path]);
    return true;
  } catch {
    return false;
  }
}

test("docker: the image's entry point runs a cell from docker-compose.yml's environment; the HEALTHCHECK passes", { timeout: 120_000, skip: yamlUnavailable }, async () => {
  const dockerfile = readFileSync(join(deploy, 'docker', 'Dockerfile'), 'utf8');
  assert.match(dockerfile, /ENTRYPOINT \["tini", "--", "node", "\/opt\/baton\/dist\/src\/cli\/main.js"\]/);
  assert.match(dockerfile, /^CMD \["server"\]$/m);
  assert.match(dockerfile, /^USER node$/m);
  const healthcheck = /CMD \["node", "-e", "(.*)"\]\n/.exec(dockerfile.replace(/\\\n\s*/g, ''))?.[1];
  assert.ok(healthcheck !== undefined, 'a HEALTHCHECK running node');

  const [compose] = yamlDocuments(join(deploy, 'docker', 'docker-compose.yml'));
  const services = compose.services as Record<string, { environment: Record<string, string> }>;
  const names = Object.keys(services);
  assert.deepEqual(names, ['n1', 'n2', 'n3']);
  // Each container's host name and ports, as loopback ports on this machine.
  const ports = await freePorts(names.length * 3);
  const mapped = new Map<string, string>();
  names.forEach((name, i) => {
    for (const [j, port] of [2379, 2380, 2381].entries()) mapped.set(`${name}:${port}`, `127.0.0.1:${ports[i * 3 + j]}`);
  });
  const local = (value: string, self: string): string => value
    .replace(/\b(n\d):(\d+)/g, (all) => mapped.get(all) ?? all)
    .replace(/0\.0\.0\.0:(\d+)/g, (_all, port: string) => mapped.get(`${self}:${port}`) ?? '');
  for (const name of names) {
    const env: Record<string, string> = { BATON_DATA_DIR: join(scratch, `docker-${name}`) }; // the image's ENV
    for (const [key, value] of Object.entries(services[name]!.environment)) env[key] = local(String(value), name);
    env['BATON_TICK_MS'] = '50';
    spawnNode(env);
  }
  const endpoints = names.map((name) => `http://${mapped.get(`${name}:2379`)}`);
  await waitFor('the compose cell ready', async () => {
    const answers = await Promise.all(endpoints.map((url) => http(`${url}/readyz`, { timeoutMs: 1000 }).catch(() => null)));
    return answers.every((answer) => answer?.status === 200);
  }, 30_000);
  const client = new BatonClient({ endpoints });
  try {
    await client.put('/compose/k', 'v');
    assert.equal((await http(`${endpoints[2]}/v1/kv/compose/k`)).body.kvs[0].value, 'v');
  } finally {
    await client.close();
  }
  // The HEALTHCHECK as the image runs it (inside the container: 127.0.0.1:2379).
  const check = healthcheck!.replace('127.0.0.1:2379', mapped.get('n1:2379')!).replaceAll('\\"', '"');
  execFileSync(process.execPath, ['-e', check], { timeout: 10_000 });
});

test('kubernetes: every member parses as baton server, and the manifest keeps its promises', { skip: yamlUnavailable }, () => {
  const configs = checkStatefulCell(yamlDocuments(join(deploy, 'kubernetes', 'baton.yaml')));
  assert.deepEqual(configs.map((c) => c.name), ['baton-0', 'baton-1', 'baton-2']);
});
