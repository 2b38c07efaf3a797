// Scheduled backups (--backup-dir/--backup-every/--backup-keep) on a real 3-process cell: the
// leader alone writes them (one per interval for the cell), keeps the newest N with their
// metadata, each file checks and restores (`baton snapshot inspect`), the metrics count them, and
// a backup that cannot be written shows as baton_backup_last_failed 1 while the cell serves on.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestCell, type TestCell } from './harness.js';
import { baton } from './cli-run.js';
import { BatonClient } from '../../src/client/index.js';

let cell: TestCell;
let client: BatonClient;
const dirOf = (name: string): string => join(cell.dataDir, `backups-${name}`);

before(async () => {
  cell = await startTestCell({ argsFor: (name, dataDir) => ['--backup-dir', join(dataDir, `backups-${name}`), '--backup-every', '1s', '--backup-keep', '3'] });
  client = new BatonClient({ endpoints: cell.cell.clientUrls() });
});

after(async () => {
  await client?.close();
  await cell?.close();
});

async function metric(name: string, member: string): Promise<number> {
  const text = await (await fetch(`${cell.cell.clientUrl(member)}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

test('the leader writes one backup per interval, keeps 3, each checks; a failed one is visible', { timeout: 90_000 }, async () => {
  for (let i = 0; i < 20; i++) await client.put(`/b/${i}`, `v${i}`);
  const written = await client.put('/b/last', 'x');
  const { leader } = await client.status();
  const leaderName = `n${leader}`;
  await sleep(6_000);
  assert.equal((await client.status()).leader, leader, 'no leader change during the test');
  // A new backup is renamed in just before the oldest is pruned: a listing can fall between.
  let snaps: string[] = [];
  for (let look = 0; look < 40; look++) {
    snaps = readdirSync(dirOf(leaderName)).filter((f) => f.endsWith('.snap')).sort();
    if (snaps.length === 3) break;
    await sleep(50);
  }
  assert.equal(snaps.length, 3, `kept 3: ${snaps.join(', ')}`);
  for (const name of cell.names.filter((n) => n !== leaderName)) {
    assert.ok(!existsSync(dirOf(name)) || readdirSync(dirOf(name)).length === 0, `${name} (a follower) wrote none`);
    assert.equal(await metric('baton_backup_success_total', name), 0);
  }
  // Copied at once: a backup a second means the listed newest is pruned three seconds later, and
  // on a loaded machine the CLI below can take that long to start (ENOENT seen in a clean clone).
  const listed = join(dirOf(leaderName), snaps.at(-1) as string);
  const newest = join(cell.dataDir, 'inspected.snap');
  const metaText = readFileSync(`${listed}.json`, 'utf8');
  copyFileSync(listed, newest);
  const meta = JSON.parse(metaText) as { revision: number; sha256: string; clusterId: string; bytes: number };
  assert.ok(meta.revision >= written.revision);
  assert.equal(meta.clusterId, (await client.status()).clusterId);
  const inspected = await baton(['snapshot', 'inspect', newest, '-w', 'json']);
  assert.equal(inspected.code, 0, inspected.stderr);
  const status = JSON.parse(inspected.stdout) as { revision: number; sha256: string; totalSize: number };
  assert.equal(status.revision, meta.revision);
  assert.equal(status.sha256, meta.sha256);
  assert.equal(status.totalSize, meta.bytes);
  assert.ok(await metric('baton_backup_success_total', leaderName) >= 4);
  assert.equal(await metric('baton_backup_last_failed', leaderName), 0);
  // The directory becomes a file: the next backups fail, the metric says so, the cell serves on.
  // Moved aside first: the leader may be writing its next backup there this very moment.
  renameSync(dirOf(leaderName), `${dirOf(leaderName)}.gone`);
  writeFileSync(dirOf(leaderName), 'not a directory');
  rmSync(`${dirOf(leaderName)}.gone`, { recursive: true, maxRetries: 10, retryDelay: 100 });
  await sleep(2_500);
  assert.equal(await metric('baton_backup_last_failed', leaderName), 1);
  assert.ok(await metric('baton_backup_failures_total', leaderName) >= 1);
  await client.put('/b/after', 'still serving');
});
