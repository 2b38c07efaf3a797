// The `baton` CLI's operator commands against a real 3-process cell: `snapshot save` writes a
// file that decodes and restores to the cell's keys (and never leaves a half-written FILE), and
// `lease list` pages through the cell's leases. (lock/elect: cli-lock.test.ts)
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, startTestCell, type TestCell } from './harness.js';
import { baton, cliPath } from './cli-run.js';
import { BatonClient } from '../../src/client/index.js';
import { MemoryEngine, MvccStore, defaultMvccLimits } from '../../src/mvcc/index.js';

let cell: TestCell;
let client: BatonClient;
let endpoints: string[];
let scratch: string;

before(async () => {
  cell = await startTestCell();
  client = new BatonClient({ endpoints: cell.cell.clientUrls() });
  endpoints = ['--endpoints', cell.cell.clientUrls().join(',')];
  scratch = mkdtempSync(join(tmpdir(), 'baton-cli-'));
});

after(async () => {
  await client?.close();
  await cell?.close();
  rmSync(scratch, { recursive: true, force: true });
});

test('snapshot save: the file decodes, restores to the cell\'s keys, and appears only when whole', async () => {
  const session = await client.session({ ttlSeconds: 10 });
  for (let i = 0; i < 50; i++) await client.put(`/snap/${String(i).padStart(2, '0')}`, `value-${i}`);
  await client.put('/snap/leased', 'mine', { lease: session.leaseId });
  await client.delete('/snap/07');
  const live = await client.get('/snap/', { prefix: true });
  const file = join(scratch, 'cell.snap');
  // The leader has applied everything acknowledged; ask it first.
  const status = await client.status();
  const leaderUrl = status.members.find((m) => m.id === status.leader)?.clientUrl as string;
  const saved = await baton(['snapshot', 'save', file, '--endpoints', leaderUrl, '-w', 'json']);
  assert.equal(saved.code, 0, saved.stderr);
  assert.doesNotMatch(saved.stderr, /MiB/, 'no progress bar when stderr is not a terminal');
  const report = JSON.parse(saved.stdout) as { bytes: number; entries: number; revision: number; sha256: string };
  assert.ok(report.revision >= live.revision, `snapshot revision ${report.revision} >= ${live.revision}`);
  const bytes = readFileSync(file);
  assert.equal(bytes.length, report.bytes);
  assert.deepEqual(readdirSync(scratch), ['cell.snap'], 'no partial file left behind');

  const restored = new MvccStore(new MemoryEngine(), defaultMvccLimits);
  restored.restore([new Uint8Array(bytes)]);
  assert.equal(restored.revision, report.revision);
  const got = restored.range({ type: 'get', key: '/snap/', prefix: true });
  const pairs = (kvs: readonly { key: string | Uint8Array; value: string | Uint8Array }[]): string[][] =>
    kvs.map((kv) => [text(kv.key), text(kv.value)]);
  assert.deepEqual(pairs(got.kvs), pairs(live.kvs));
  assert.equal(got.kvs.find((kv) => text(kv.key) === '/snap/leased')?.lease, session.leaseId);
  assert.ok(restored.lease(session.leaseId) !== null, 'leases travel in the snapshot');

  // A node that cannot be reached: exit 3, and FILE is not touched.
  const [closedPort] = await freePorts(1);
  const other = join(scratch, 'never.snap');
  const failed = await baton(['snapshot', 'save', other, '--endpoints', `http://127.0.0.1:${closedPort}`]);
  assert.equal(failed.code, 3, failed.stderr);
  assert.match(failed.stderr, /unavailable/);
  assert.equal(existsSync(other), false);
  assert.deepEqual(readdirSync(scratch), ['cell.snap']);
  await session.close();
});

test('snapshot save on a terminal shows a progress bar against the node\'s estimate, then only its result', { skip: hasScript() ? false : 'util-linux script(1) is needed for a pseudo-terminal' }, () => {
  const file = join(scratch, 'tty.snap');
  // script(1) gives the CLI a pseudo-terminal as stdout and stderr.
  const command = [process.execPath, cliPath, 'snapshot', 'save', file, '--endpoints', cell.cell.clientUrls()[0] as string].map((a) => `'${a}'`).join(' ');
  const output = execFileSync('script', ['-qec', command, '/dev/null'], { timeout: 30_000 }).toString();
  assert.match(output, /\rsnapshot from http:\/\/127\.0\.0\.1:\d+ \[[#.]{30}\] \d+% [\d.]+ MiB of ~[\d.]+ MiB, [\d.]+ MiB\/s\x1b\[K/);
  assert.match(output, /\r\x1b\[Ksnapshot saved to /, 'the bar is erased before the result line');
  // Not a terminal (the other tests): no bar in the output at all.
  rmSync(file);
});

function hasScript(): boolean {
  try {
    execFileSync('sh', ['-c', 'command -v script'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

test('lease list: pages through every lease with remaining TTLs', async () => {
  const granted: number[] = [];
  for (let i = 0; i < 5; i++) granted.push((await client.leaseGrant(30)).id);
  const listed = await baton(['lease', 'list', ...endpoints, '-w', 'json']);
  assert.equal(listed.code, 0, listed.stderr);
  const all = JSON.parse(listed.stdout) as { leases: { id: number; ttl: number; grantedTtl: number }[] };
  for (const id of granted) {
    const lease = all.leases.find((l) => l.id === id);
    assert.ok(lease !== undefined, `lease ${id} listed`);
    assert.equal(lease.grantedTtl, 30);
    assert.ok(lease.ttl > 0 && lease.ttl <= 30);
  }
  // --limit and --after page: two at a time after the first granted lease.
  const page = await baton(['lease', 'list', '--after', String(granted[0]), '--limit', '2', ...endpoints, '-w', 'json']);
  assert.equal(page.code, 0, page.stderr);
  const ids = (JSON.parse(page.stdout) as { leases: { id: number }[] }).leases.map((l) => l.id);
  assert.deepEqual(ids, granted.slice(1, 3));
  for (const id of granted) await client.leaseRevoke(id);
});

function text(value: string | Uint8Array): string {
  return typeof value === 'string' ? value : Buffer.from(value).toString('utf8');
}
