// A follower cut off while the cell writes far past the log the members keep (10 entries below
// each checkpoint) can no longer catch up from the log: after healing, the leader makes a
// snapshot file from a read view of its store (none exists: nothing snapshots on a schedule),
// streams it over the snapshot connection, the follower installs it (a verified file, no partial
// left behind) and then serves every key from its own state (serializable reads, so nothing is
// forwarded). The same again with encryption at rest on: the snapshot files on both members are
// sealed (no value in plaintext), travel as they are, and the follower restores from its file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findLeader, http, putSurely, sleep, startTestCell } from './harness.js';

const keyCount = 120;
const valueBytes = 48 * 1024; // ~5.6 MiB of values: a snapshot of several 1 MiB chunks

function valueOf(i: number): string {
  return `v${i}-`.padEnd(valueBytes, String.fromCharCode(97 + (i % 26)));
}

test('an isolated follower catches up from a streamed snapshot file', async (t) => {
  await catchUpFromSnapshot(t, []);
});

test('encrypted: the snapshot files hold no value in plaintext, travel sealed and restore the follower', async (t) => {
  const keys = mkdtempSync(join(tmpdir(), 'baton-kek-'));
  const keyFile = join(keys, 'kek.hex');
  writeFileSync(keyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  try {
    await catchUpFromSnapshot(t, ['--encryption-key-file', keyFile]);
  } finally {
    rmSync(keys, { recursive: true, force: true });
  }
});

async function catchUpFromSnapshot(t: { diagnostic(message: string): void }, extraArgs: readonly string[]): Promise<void> {
  const encrypted = extraArgs.length > 0;
  const cell = await startTestCell({ extraArgs: ['--log-catchup-entries', '10', ...extraArgs], proxies: true });
  try {
    const leader = await findLeader(cell);
    const follower = cell.names.find((n) => n !== leader) as string;
    await putSurely(`${cell.cell.clientUrl(leader)}/v1/kv/before`, 'x');
    cell.isolate(follower);
    const leaderUrl = cell.cell.clientUrl(leader);
    for (let i = 0; i < keyCount; i += 8) {
      const batch = [];
      for (let j = i; j < Math.min(keyCount, i + 8); j++) {
        batch.push(putSurely(`${leaderUrl}/v1/kv/k${j}`, valueOf(j)));
      }
      await Promise.all(batch);
    }
    cell.healAll();
    const followerUrl = cell.cell.clientUrl(follower);
    const deadline = Date.now() + 20_000;
    let missing = keyCount;
    while (Date.now() < deadline) {
      const last = await http(`${followerUrl}/v1/kv/k${keyCount - 1}?consistency=serializable`)
        .catch(() => null);
      if (last?.status === 200 && last.body.kvs?.[0]?.value === valueOf(keyCount - 1)) break;
      await sleep(200);
    }
    for (let i = 0; i < keyCount; i++) {
      const read = await http(`${followerUrl}/v1/kv/k${i}?consistency=serializable`);
      if (read.status === 200 && read.body.kvs?.[0]?.value === valueOf(i)) missing--;
    }
    assert.equal(missing, 0, `keys not served; follower log:\n${cell.cell.tail(follower, 30)}`);
    const followerLog = cell.cell.tail(follower, 400);
    const installed = /snapshot \d+ from member \d+ installed \((\d+) bytes\)/.exec(followerLog);
    assert.ok(installed !== null, followerLog);
    t.diagnostic(installed[0]);
    assert.ok(Number(installed[1]) > 2 * 1024 * 1024, 'the snapshot spans several chunks');
    const snapFiles = readdirSync(join(cell.dataDir, follower, 'snap'));
    assert.ok(snapFiles.some((name) => name.endsWith('.snap')), snapFiles.join(' '));
    assert.ok(!snapFiles.some((name) => name.endsWith('.partial')), snapFiles.join(' '));
    const probe = Buffer.from(valueOf(keyCount - 1).slice(0, 64));
    for (const member of [leader, follower]) {
      const dir = join(cell.dataDir, member, 'snap');
      for (const name of readdirSync(dir).filter((n) => n.endsWith('.snap'))) {
        assert.equal(readFileSync(join(dir, name)).includes(probe), !encrypted, `${member}/snap/${name}: a value in plaintext is ${encrypted ? 'absent' : 'present'}`);
      }
    }

    // The store lost (here: its directory removed) while the WAL says the log starts at the
    // installed snapshot: start-up restores from that file, read in bounded pieces, then replays.
    cell.cell.signal(follower, 'SIGKILL');
    await cell.cell.waitExit(follower);
    rmSync(join(cell.dataDir, follower, 'db'), { recursive: true, force: true });
    cell.cell.start(follower);
    await cell.cell.waitReady(30_000);
    assert.match(cell.cell.tail(follower, 200), /restoring the state machine from snapshot/);
    let served = 0;
    for (let i = 0; i < keyCount; i++) {
      const read = await http(`${followerUrl}/v1/kv/k${i}?consistency=serializable`);
      if (read.status === 200 && read.body.kvs?.[0]?.value === valueOf(i)) served++;
    }
    assert.equal(served, keyCount, 'every key served after the restore from the file');
  } finally {
    await cell.close();
  }
}
