// Encrypted backups end to end (docs/design/encryption.md "Backups"): a cell with a key writes its
// scheduled backups (--backup-dir) sealed under the key, and `baton snapshot save` with the key
// flag seals the download; neither file holds a written key or value; `inspect` and `restore`
// refuse them without the key or with the wrong one (naming the file), and name the offset of a
// damaged chunk; restored with the key, a new cell serves the data. The members' stores (records
// sealed, the default with a key) hold no value either, and a member restarted with the wrong key
// or none stops naming the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, http, putSurely, startTestCell } from './harness.js';
import { baton } from './cli-run.js';
import { ProcessCell } from '../../src/node/testing/process-cell.js';

const secret = 'backup-probe-value-3f9a1c';
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

test('encrypted backups: no plaintext, refused without or with the wrong key, damage named, restored into a new cell', { timeout: 240_000 }, async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'baton-encbackup-'));
  const keyFile = join(scratch, 'kek.hex');
  const wrongKeyFile = join(scratch, 'wrong.hex');
  writeFileSync(keyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  writeFileSync(wrongKeyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  const keyArgs = ['--encryption-key-file', keyFile];
  const cell = await startTestCell({ extraArgs: keyArgs, argsFor: (name, dataDir) => ['--backup-dir', join(dataDir, `backups-${name}`), '--backup-every', '1s', '--backup-keep', '100'] });
  let cellB: ProcessCell | null = null;
  try {
    const url = cell.cell.clientUrl('n1');
    for (let i = 0; i < 50; i++) await putSurely(`${url}/v1/kv/enc/${i}`, `${secret}-${i}`);
    await sleep(3_000);
    // The members' stores seal their records (the default with a key): no value in state.mdb.
    for (const name of cell.names) {
      const store = readFileSync(join(cell.dataDir, name, 'db', 'state.mdb'));
      assert.equal(store.includes(Buffer.from(secret)), false, `${name}/db/state.mdb holds a value in plaintext`);
      assert.ok(existsSync(join(cell.dataDir, name, 'db', 'records.key')));
    }
    const dirs = cell.names.map((name) => join(cell.dataDir, `backups-${name}`));
    const newest = dirs.flatMap((dir) => { try { return readdirSync(dir).filter((f) => f.endsWith('.snap')).map((f) => join(dir, f)); } catch { return []; } }).sort().at(-1);
    assert.ok(newest !== undefined, 'the leader wrote a scheduled backup');
    // A copy, so the restore below reads a file that stays put.
    const scheduled = join(scratch, 'scheduled.snap');
    copyFileSync(newest, scheduled);
    const meta = JSON.parse(readFileSync(`${newest}.json`, 'utf8')) as { kekId: string | null; revision: number };
    const saved = join(scratch, 'saved.snap');
    const save = await baton(['snapshot', 'save', saved, '--endpoints', url, ...keyArgs, '-w', 'json'], 60_000);
    assert.equal(save.code, 0, save.stderr);
    const kekId = (JSON.parse(save.stdout) as { kekId: string }).kekId;
    assert.match(kekId, /^[0-9a-f]{16}$/);
    assert.equal(meta.kekId, kekId, 'the backup metadata names the key id');
    for (const file of [scheduled, saved]) {
      assert.equal(readFileSync(file).includes(Buffer.from(secret)), false, `${file} holds a value in plaintext`);
      const inspected = await baton(['snapshot', 'inspect', file, ...keyArgs, '-w', 'json']);
      assert.equal(inspected.code, 0, inspected.stderr);
      const status = JSON.parse(inspected.stdout) as { totalKeys: number; kekId: string };
      assert.ok(status.totalKeys >= 50);
      assert.equal(status.kekId, kekId);
      const bare = await baton(['snapshot', 'inspect', file]);
      assert.notEqual(bare.code, 0);
      assert.ok(bare.stderr.includes(file) && bare.stderr.includes(kekId), bare.stderr);
    }
    const wrong = await baton(['snapshot', 'restore', saved, '--dev', '--data-dir', join(scratch, 'dev-wrong'), '--encryption-key-file', wrongKeyFile]);
    assert.equal(wrong.code, 2);
    assert.ok(wrong.stderr.includes(saved) && wrong.stderr.includes('not among the configured keys'), wrong.stderr);
    const damaged = join(scratch, 'damaged.snap');
    const flipped = Buffer.from(readFileSync(saved));
    flipped[flipped.length - 40] = (flipped[flipped.length - 40] as number) ^ 0xff;
    writeFileSync(damaged, flipped);
    const bad = await baton(['snapshot', 'restore', damaged, '--dev', '--data-dir', join(scratch, 'dev-bad'), ...keyArgs]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /damaged\.snap at byte offset \d+: chunk \d+ does not authenticate/);

    // Restore the scheduled backup into a new cell: given the key, the restore writes each member's
    // store sealed (records.key, no value in state.mdb), and the members start with the same key.
    const ports = await freePorts(6);
    const membersB = [1, 2, 3].map((i) => ({ name: `n${i}`, clientPort: ports[i - 1] as number, peerPort: ports[i + 2] as number }));
    const initialCluster = membersB.map((m) => `${m.name}=http://127.0.0.1:${m.peerPort}`).join(',');
    const rootB = join(scratch, 'cell-b');
    const nonce = 'encbackup1';
    for (const m of membersB) {
      const restored = await baton(['snapshot', 'restore', scheduled, '--name', m.name, '--data-dir', join(rootB, m.name),
        '--initial-cluster', initialCluster, '--restore-nonce', nonce, ...keyArgs], 60_000);
      assert.equal(restored.code, 0, restored.stderr);
      assert.match(restored.stdout, /store records sealed/);
      const db = join(rootB, m.name, 'db');
      assert.ok(existsSync(join(db, 'records.key')), `${m.name}: the restored store has no records.key`);
      for (const file of readdirSync(db)) {
        assert.equal(readFileSync(join(db, file)).includes(Buffer.from(secret)), false, `restored ${m.name}/db/${file} holds a value in plaintext`);
      }
    }
    cellB = new ProcessCell({ dataDir: rootB, members: membersB, extraArgs: ['--tick-ms', '50', '--election-ticks', '10', ...keyArgs] });
    cellB.startAll();
    await cellB.waitReady(60_000);
    const answer = await http(`${cellB.clientUrl('n2')}/v1/kv/enc/49`);
    assert.equal(answer.body.kvs?.[0]?.value, `${secret}-49`, 'the new cell serves the backed-up data');

    // A member whose store seals its records: the wrong key, or none, stops it naming the file.
    cell.cell.signal('n3', 'SIGTERM');
    await cell.cell.waitExit('n3', 20_000);
    cell.cell.start('n3', { extraArgs: ['--encryption-key-file', wrongKeyFile] });
    assert.equal(await cell.cell.waitExit('n3', 20_000), 2);
    let output = cell.cell.tail('n3', 30);
    assert.ok(output.includes(join(cell.dataDir, 'n3', 'db', 'records.key')) && /not among the configured keys/.test(output), output);
    cell.cell.start('n3', { extraArgs: ['--encryption-key-file', ''] });
    assert.equal(await cell.cell.waitExit('n3', 20_000), 2);
    output = cell.cell.tail('n3', 30);
    assert.ok(output.includes(join(cell.dataDir, 'n3', 'db', 'state.mdb')) && /seals its records/.test(output), output);
    cell.cell.start('n3');
    await cell.cell.waitReady(30_000);
    const back = await http(`${cell.cell.clientUrl('n3')}/v1/kv/enc/7?consistency=serializable`);
    assert.equal(back.body.kvs?.[0]?.value, `${secret}-7`, 'restarted with the right key, it serves its sealed records');
  } finally {
    await cellB?.stopAll();
    await cell.close();
    rmSync(scratch, { recursive: true, force: true });
  }
});
