// `baton lock` and `baton elect` against a real 3-process cell: `baton lock -- CMD` hands CMD the
// fencing token, passes its exit code on, releases the lock, and kills CMD (before anyone else
// can get the lock) when its session is lost to a network cut; `baton elect` campaigns, holds,
// observes and resigns on Ctrl-C.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FaultProxy, freePorts, sleep, startTestCell, type TestCell, within } from './harness.js';
import { baton, cliPath } from './cli-run.js';
import { BatonClient } from '../../src/client/index.js';

let cell: TestCell;
let client: BatonClient;
let endpoints: string[];
let scratch: string;

before(async () => {
  cell = await startTestCell();
  client = new BatonClient({ endpoints: cell.cell.clientUrls() });
  endpoints = ['--endpoints', cell.cell.clientUrls().join(',')];
  scratch = mkdtempSync(join(tmpdir(), 'baton-cli-lock-'));
});

after(async () => {
  await client?.close();
  await cell?.close();
  rmSync(scratch, { recursive: true, force: true });
});

test('baton lock -- CMD: CMD gets the token, its exit code is passed on, the lock is released', async () => {
  const script = 'process.stdout.write(String(process.env.BATON_FENCING_TOKEN)); process.exit(7)';
  const run = await baton(['lock', 'cli-jobs', ...endpoints, '--', process.execPath, '-e', script]);
  assert.equal(run.code, 7, run.stderr);
  const token = Number(run.stdout);
  assert.ok(Number.isSafeInteger(token) && token > 0, `token ${run.stdout}`);
  const session = await client.session({ ttlSeconds: 5 });
  const state = await client.locks(session).state('cli-jobs');
  assert.equal(state.holder, null, 'released when CMD exited');
  const next = await client.locks(session).acquire('cli-jobs', { waitMs: 0 });
  assert.ok(next.token > token);
  await next.release();
  const missing = await baton(['lock', 'cli-jobs', ...endpoints, '--', join(scratch, 'no-such-command')]);
  assert.equal(missing.code, 127);
  const usage = await baton(['lock', 'cli-jobs', ...endpoints, '--']);
  assert.equal(usage.code, 2);
  await session.close();
});

test('baton lock kills CMD when its session is lost, before another process gets the lock', async () => {
  const target = cell.names[0] as string;
  const [port] = await freePorts(1);
  const proxy = await FaultProxy.start(port as number, Number(new URL(cell.cell.clientUrl(target)).port));
  const marks = join(scratch, 'child-marks');
  // CMD: says it started (with its token), and on SIGTERM notes the time and exits.
  const script = `
    const fs = require('node:fs');
    fs.writeFileSync(${JSON.stringify(marks)}, 'started ' + process.env.BATON_FENCING_TOKEN + '\\n');
    process.on('SIGTERM', () => { fs.appendFileSync(${JSON.stringify(marks)}, 'term ' + Date.now() + '\\n'); process.exit(143); });
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, [
    // TTL 10: on a loaded machine (load 20+ on 2 cores seen) a 3-5 s lease is lost without any cut.
    cliPath, 'lock', 'cli-cut', '--ttl', '10', '--endpoints', `http://127.0.0.1:${port}`, '--no-discover',
    '--', process.execPath, '-e', script,
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const other = new BatonClient({ endpoints: cell.cell.clientUrls() });
  try {
    const deadline = Date.now() + 30_000;
    while (!(existsSync(marks) && readFileSync(marks, 'utf8').startsWith('started')) && Date.now() < deadline) await sleep(50);
    assert.ok(existsSync(marks), `CMD never started; baton lock stderr: ${stderr}`);
    const childToken = Number(/started (\d+)/.exec(readFileSync(marks, 'utf8'))?.[1]);
    const session = await other.session({ ttlSeconds: 5 });
    const contender = other.locks(session).acquire('cli-cut', { waitMs: 60_000 }).then((lock) => ({ lock, atMs: Date.now() }));
    await sleep(500);
    const cutAtMs = Date.now();
    proxy.block();
    const code = await within(exited, 30_000, () => 'timeout');
    assert.equal(code, 4, `baton lock exit ${code}; stderr: ${stderr}`);
    assert.match(stderr, /session_lost/);
    const termAtMs = Number(/term (\d+)/.exec(readFileSync(marks, 'utf8'))?.[1]);
    assert.ok(termAtMs >= cutAtMs, 'CMD was told to stop after the cut');
    const { lock, atMs } = await contender;
    assert.ok(termAtMs < atMs, `CMD stopped (${termAtMs}) before the other process got the lock (${atMs})`);
    assert.ok(lock.token > childToken);
    console.log(`CMD got SIGTERM ${termAtMs - cutAtMs} ms after the cut; the lock moved ${atMs - termAtMs} ms after that`);
    await lock.release();
    await session.close();
  } finally {
    child.kill('SIGKILL');
    await other.close();
    await proxy.close();
  }
});

test('baton elect: campaign and hold, observe the leader, resign on Ctrl-C', async () => {
  const holder = spawn(process.execPath, [cliPath, 'elect', 'cli-primary', 'http://me:1', ...endpoints], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  holder.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => holder.once('exit', (code) => resolve(code)));
  try {
    const deadline = Date.now() + 15_000;
    while (!out.includes('elected') && Date.now() < deadline) await sleep(50);
    assert.match(out, /^elected: http:\/\/me:1 \(term \d+/);
    const observed = await baton(['elect', 'cli-primary', '--count', '1', ...endpoints, '-w', 'json']);
    assert.equal(observed.code, 0, observed.stderr);
    const change = JSON.parse(observed.stdout) as { leader: { value: string; term: number } };
    assert.equal(change.leader.value, 'http://me:1');
    assert.equal(String(change.leader.term), /term (\d+)/.exec(out)?.[1]);
    holder.kill('SIGINT');
    assert.equal(await exited, 0);
    const after = await client.election(null, 'cli-primary').leader();
    assert.equal(after.leader, null, 'resigned on Ctrl-C');
  } finally {
    holder.kill('SIGKILL');
  }
});
