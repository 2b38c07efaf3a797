// The Helm chart (deploy/helm/baton). helm itself installs from neither Debian nor npm here, so the
// chart is rendered by test/cluster/helm-render (Go's text/template with Sprig, the engine and
// function library helm uses, from Debian's golang-go and golang-github-masterminds-sprig-dev);
// where a `helm` binary is on PATH, `helm template` must render the same documents. Checked:
// the rendered cell keeps the manifest's promises (k8s-checks.ts) at 3 and 5 members; a member
// count a Raft cell should not have is refused with the reason; and with tls.enabled the
// members' environment, given certificates made by `baton certs` under the names the chart
// expects, forms a mutual-TLS cell that serves a client (host names mapped to loopback ports).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatonClient } from '../../src/client/index.js';
import { baton, cliPath } from './cli-run.js';
import { freePorts, sleep } from './harness.js';
import { checkStatefulCell, memberEnvironment, yamlDocuments, yamlUnavailable } from './k8s-checks.js';
import { repoRoot } from './old-build.js';

const chart = join(repoRoot, 'deploy', 'helm', 'baton');
const rendererSource = join(repoRoot, 'test', 'cluster', 'helm-render', 'main.go');
const gocode = '/usr/share/gocode';
const scratch = mkdtempSync(join(tmpdir(), 'baton-helm-'));
const children: ChildProcess[] = [];

after(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await sleep(200);
  rmSync(scratch, { recursive: true, force: true });
});

function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The renderer's binary, or why it cannot be built here. */
const renderer = ((): { binary: string } | string => {
  if (yamlUnavailable !== false) return yamlUnavailable;
  if (!onPath('go')) return 'the Go toolchain (Debian golang-go) is needed to render the chart';
  if (!existsSync(join(gocode, 'src/github.com/Masterminds/sprig/functions.go'))) {
    return 'Sprig (Debian golang-github-masterminds-sprig-dev) is needed to render the chart';
  }
  const binary = join(scratch, 'helm-render');
  execFileSync('go', ['build', '-o', binary, rendererSource], {
    cwd: scratch,
    env: { ...process.env, GO111MODULE: 'off', GOPATH: `${join(scratch, 'gopath')}:${gocode}`, GOFLAGS: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return { binary };
})();
const skip = typeof renderer === 'string' ? renderer : false;

let renders = 0;
/** The chart rendered for release `release` with `values` over values.yaml: its documents and NOTES. */
function render(release: string, values: object = {}): { documents: any[]; notes: string; text: string } {
  assert.ok(typeof renderer !== 'string');
  const valuesFile = join(scratch, `values-${++renders}.json`);
  writeFileSync(valuesFile, JSON.stringify(values)); // JSON is YAML
  const text = execFileSync(renderer.binary, [chart, release, 'default', '-f', valuesFile], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
  const file = join(scratch, `rendered-${renders}.yaml`);
  const [manifests, notes = ''] = text.split('# NOTES:\n');
  writeFileSync(file, manifests as string);
  return { documents: yamlDocuments(file), notes, text };
}

test('helm: the chart renders and keeps the manifest\'s promises at 3 and 5 members', { skip }, () => {
  const three = render('rel');
  const configs = checkStatefulCell(three.documents);
  assert.deepEqual(configs.map((c) => c.name), ['rel-0', 'rel-1', 'rel-2']);
  assert.ok(configs.every((c) => c.clientTls === null && c.peerTls === null), 'plain HTTP by default');
  assert.match(three.notes, /3 members, rel-0\.\.2/);
  const five = render('big', { replicas: 5, cell: 'orders', resources: { requests: { cpu: '2' } }, storage: { size: '50Gi', storageClassName: 'fast' } });
  assert.deepEqual(checkStatefulCell(five.documents).map((c) => c.name), ['big-0', 'big-1', 'big-2', 'big-3', 'big-4']);
  const set = five.documents.find((d) => d.kind === 'StatefulSet');
  assert.equal(set.spec.template.spec.containers[0].resources.requests.cpu, '2');
  assert.equal(set.spec.volumeClaimTemplates[0].spec.storageClassName, 'fast');
  assert.equal(set.spec.volumeClaimTemplates[0].spec.resources.requests.storage, '50Gi');
});

test('helm: a member count a Raft cell should not have is refused, saying why', { skip }, () => {
  assert.ok(typeof renderer !== 'string');
  const valuesFile = join(scratch, 'values-even.json');
  writeFileSync(valuesFile, JSON.stringify({ replicas: 4 }));
  assert.throws(
    () => execFileSync(renderer.binary, [chart, 'rel', 'default', '-f', valuesFile], { stdio: ['ignore', 'pipe', 'pipe'] }),
    (error: Error & { stderr?: Buffer }) => /replicas must be 1, 3 or 5/.test(String(error.stderr)),
  );
});

test('helm: with tls.enabled the members form a mutual-TLS cell from `baton certs` certificates', { skip, timeout: 90_000 }, async () => {
  const { documents } = render('rel', { tls: { enabled: true, crl: true }, extraEnv: [{ name: 'BATON_TICK_MS', value: '50' }] });
  const configs = checkStatefulCell(documents);
  assert.ok(configs.every((c) => c.clientTls !== null && c.peerTls !== null), 'TLS on clients and peers');
  const set = documents.find((d) => d.kind === 'StatefulSet');
  const pod = set.spec.template.spec;
  const container = pod.containers[0];
  assert.equal(pod.volumes[0].secret.secretName, 'baton-tls');
  assert.equal(container.readinessProbe.httpGet.scheme, 'HTTPS');
  // The secret's files, made as docs/deploy.md says, where the pod mounts them.
  const certs = join(scratch, 'tls');
  mkdirSync(certs);
  const names = ['rel-0', 'rel-1', 'rel-2'];
  for (const args of [
    ['certs', 'ca', '--dir', certs],
    ...names.map((name) => ['certs', 'member', name, '--dir', certs, '--cell', 'baton', '--host', '127.0.0.1,localhost']),
    ['certs', 'client', 'root', '--dir', certs],
    ['certs', 'crl', '--dir', certs],
  ]) {
    const result = await baton(args);
    assert.equal(result.code, 0, `baton ${args.join(' ')}: ${result.stderr}`);
  }
  // Each pod's host names and ports as loopback ports on this machine.
  const ports = await freePorts(names.length * 3);
  const mapped = new Map<string, string>();
  names.forEach((name, i) => {
    for (const [j, port] of [2379, 2380, 2381].entries()) mapped.set(`${name}:${port}`, `127.0.0.1:${ports[i * 3 + j]}`);
  });
  const local = (value: string, self: string): string => value
    .replace(/\b(rel-\d)\.rel-peers:(\d+)/g, (_all, pod: string, port: string) => mapped.get(`${pod}:${port}`) ?? _all)
    .replace(/0\.0\.0\.0:(\d+)/g, (_all, port: string) => mapped.get(`${self}:${port}`) ?? '')
    .replace('/etc/baton/tls', certs)
    .replace('/var/lib/baton', join(scratch, `data-${self}`));
  const logs: string[][] = [];
  for (const name of names) {
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(memberEnvironment(container, name))) env[key] = local(value, name);
    const log: string[] = [];
    const child = spawn(process.execPath, [cliPath, ...container.args], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (chunk: Buffer) => log.push(chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => log.push(chunk.toString()));
    children.push(child);
    logs.push(log);
  }
  const endpoints = names.map((name) => `https://${mapped.get(`${name}:2379`)}`);
  const tls = {
    ca: readFileSync(join(certs, 'ca.pem')),
    cert: readFileSync(join(certs, 'client-root.pem')),
    key: readFileSync(join(certs, 'client-root-key.pem')),
  };
  const client = new BatonClient({ endpoints, tls });
  try {
    const deadline = Date.now() + 40_000;
    for (;;) {
      try {
        await client.put('/helm/k', 'v');
        break;
      } catch (error) {
        if (Date.now() > deadline) assert.fail(`no write within 40 s: ${String(error)}\n${logs.map((l) => l.join('').slice(-1500)).join('\n--\n')}`);
        await sleep(300);
      }
    }
    // Every member serves it: a member may still be starting while two others took the write.
    for (const [i, url] of endpoints.entries()) {
      const one = new BatonClient({ endpoints: [url], tls, discover: false, retry: { attemptsMax: 1 } });
      try {
        const until = Date.now() + 30_000;
        for (;;) {
          const read = await one.getValue('/helm/k').then((kv) => kv?.value, (error: Error) => error);
          if (read === 'v') break;
          if (Date.now() > until) assert.fail(`${url} never served the write: ${String(read)}\n${(logs[i] ?? []).join('').slice(-1500)}`);
          await sleep(300);
        }
      } finally {
        await one.close();
      }
    }
  } finally {
    await client.close();
  }
  // Without a client certificate the members refuse the connection.
  const anonymous = new BatonClient({ endpoints, tls: { ca: tls.ca }, discover: false, retry: { attemptsMax: 1 } });
  try {
    await assert.rejects(anonymous.getValue('/helm/k'));
  } finally {
    await anonymous.close();
  }
});

test('helm: `helm template` renders the same documents as the renderer', { skip: skip || (onPath('helm') ? false : 'helm is not installed (neither Debian nor npm has it)') }, () => {
  const ours = render('rel', { tls: { enabled: true } });
  const valuesFile = join(scratch, 'values-helm.json');
  writeFileSync(valuesFile, JSON.stringify({ tls: { enabled: true } }));
  const text = execFileSync('helm', ['template', 'rel', chart, '--namespace', 'default', '-f', valuesFile]).toString();
  const file = join(scratch, 'helm.yaml');
  writeFileSync(file, text);
  assert.deepEqual(yamlDocuments(file), ours.documents);
});
