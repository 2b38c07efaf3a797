// A port someone else holds stops `baton server` and `baton dev` at once, with a message naming
// the port (before, the dev cell printed "ready" off another cell's answers while its own nodes
// died on EADDRINUSE, and a server whose client port was taken hung). And a readiness wait is
// never satisfied by a node it did not start: a cell on the ports already (same names, same
// cluster id) is told apart by its process's age.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from './harness.js';
import { cliPath } from './cli-run.js';
import { ProcessCell } from '../../src/node/testing/process-cell.js';

const scratch = mkdtempSync(join(tmpdir(), 'baton-ports-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

async function occupy(port: number): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return server;
}

/** Runs `baton ARGS`, resolving with its exit code, stderr and how long it ran. */
function run(args: readonly string[], timeoutMs: number): Promise<{ code: number | null; stderr: string; ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, [cliPath, ...args], { stdio: ['ignore', 'ignore', 'pipe'], cwd: scratch });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) => child.on('exit', (code) => {
    clearTimeout(timer);
    resolve({ code, stderr, ms: Date.now() - started });
  }));
}

test('baton server stops at once when its client, peer or gRPC port is taken', async () => {
  for (const flag of ['--listen-client', '--listen-peer', '--listen-grpc']) {
    const [client, peer, grpc] = await freePorts(3) as [number, number, number];
    const taken = flag === '--listen-client' ? client : flag === '--listen-peer' ? peer : grpc;
    const holder = await occupy(taken);
    try {
      const result = await run(['server', '--name', 'n1', '--data-dir', join(scratch, `server${taken}`),
        '--listen-client', `http://127.0.0.1:${client}`, '--listen-peer', `http://127.0.0.1:${peer}`,
        '--listen-grpc', `http://127.0.0.1:${grpc}`, '--initial-cluster', `n1=http://127.0.0.1:${peer}`], 15_000);
      assert.equal(result.code, 2, result.stderr);
      assert.ok(result.ms < 5_000, `took ${result.ms} ms`);
      assert.match(result.stderr, new RegExp(`port ${taken} on 127\\.0\\.0\\.1 \\(${flag} http://127\\.0\\.0\\.1:${taken}\\) is already in use`));
    } finally {
      holder.close();
    }
  }
});

test('baton dev stops at once, naming the port, when one of its ports is taken', async () => {
  const ports = await freePorts(9);
  const holder = await occupy(ports[7] as number); // n2's gRPC port
  try {
    const result = await run(['dev', '--data-dir', join(scratch, 'dev'), '--client-ports', ports.slice(0, 3).join(','),
      '--peer-ports', ports.slice(3, 6).join(','), '--grpc-ports', ports.slice(6, 9).join(',')], 15_000);
    assert.equal(result.code, 2, result.stderr);
    assert.ok(result.ms < 5_000, `took ${result.ms} ms`);
    assert.match(result.stderr, new RegExp(`cannot start: port ${ports[7]} on 127\\.0\\.0\\.1 \\(n2 etcd gRPC, --grpc-ports\\) is already in use`));
    assert.doesNotMatch(result.stderr, /cell ready/);
  } finally {
    holder.close();
  }
});

test('a readiness wait refuses a node it did not start (another cell on the port)', async () => {
  const [client, peerA, peerB] = await freePorts(3) as [number, number, number];
  const first = new ProcessCell({ dataDir: join(scratch, 'first'), members: [{ name: 'n1', clientPort: client, peerPort: peerA }] });
  // The same member name on the same client port: only the answering process's age differs.
  const second = new ProcessCell({ dataDir: join(scratch, 'second'), members: [{ name: 'n1', clientPort: client, peerPort: peerB }] });
  try {
    first.startAll();
    await first.waitReady(20_000);
    await new Promise((resolve) => setTimeout(resolve, 2_100)); // older by more than the check's slack
    second.startAll();
    const refused = await second.waitReady(10_000).then(() => null, (error: Error) => error.message);
    assert.match(refused ?? 'resolved', /another cell holds the port|n1 exited/);
    console.log(`the second cell's wait: ${refused}`);
  } finally {
    await second.stopAll();
    await first.stopAll();
  }
});
