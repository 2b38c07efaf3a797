// Encryption at rest on a real 3-node cell (docs/design/encryption.md): the members' stores and WAL
// segments hold no plaintext key or value (a scan of every file under each member's db/ and wal/
// for a known key and value; the same scan finds them in a plaintext cell: the control), the cell
// restarts and serves them, and a member given the wrong key, or none, refuses to start naming the
// file it could not decrypt. This cell uses the experimental LMDB cipher; the default (records
// sealed by Baton) is covered by encrypted-backup.test.ts and snapshot-transfer.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { http, putSurely, startTestCell } from './harness.js';
import { baton } from './cli-run.js';

const secretKey = 'enc-probe-key-5d21c9';
const secretValue = 'enc-probe-value-8e07f3aa41';

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

/** The files the scan reads: the store and the WAL (LMDB's lock file holds no data). */
function scanned(member: string): string[] {
  return [...filesUnder(join(member, 'db')), ...filesUnder(join(member, 'wal'))].filter((path) => !path.endsWith('-lock'));
}

function holds(path: string, text: string): boolean {
  return readFileSync(path).includes(Buffer.from(text));
}

test('an encrypted cell keeps no plaintext key or value in its stores and WAL, restarts, refuses a wrong or missing key naming the file, and rotates its key', async () => {
  const keys = mkdtempSync(join(tmpdir(), 'baton-kek-'));
  const keyFile = join(keys, 'kek.hex');
  const wrongKeyFile = join(keys, 'wrong.hex');
  writeFileSync(keyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  writeFileSync(wrongKeyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  // The store's cipher is experimental (docs/design/encryption.md); this cell turns it on to cover it.
  const cell = await startTestCell({ size: 3, extraArgs: ['--encryption-key-file', keyFile, '--encryption-store-cipher', 'lmdb-chacha8'] });
  try {
    const url = cell.cell.clientUrl('n1');
    await putSurely(`${url}/v1/kv/${secretKey}`, secretValue);
    for (let i = 0; i < 200; i++) await putSurely(`${url}/v1/kv/${secretKey}-${i}`, `${secretValue}-${i}`);
    await cell.cell.stopAll();

    for (const name of cell.names) {
      const files = scanned(join(cell.dataDir, name));
      assert.ok(files.some((path) => path.endsWith('state.mdb')) && files.some((path) => path.endsWith('.wal')));
      for (const path of files) {
        assert.equal(holds(path, secretKey), false, `${path} holds the key in plaintext`);
        assert.equal(holds(path, secretValue), false, `${path} holds the value in plaintext`);
      }
    }

    cell.cell.startAll();
    await cell.cell.waitReady(30_000);
    const answer = await http(`${url}/v1/kv/${secretKey}-199`);
    assert.equal(answer.body.kvs?.[0]?.value, `${secretValue}-199`, 'restarted encrypted members serve the data');
    cell.cell.signal('n3', 'SIGTERM');
    await cell.cell.waitExit('n3', 20_000);

    const storeKey = join(cell.dataDir, 'n3', 'db', 'state.key');
    cell.cell.start('n3', { extraArgs: ['--encryption-key-file', wrongKeyFile] });
    assert.equal(await cell.cell.waitExit('n3', 20_000), 2);
    let output = cell.cell.tail('n3', 30);
    assert.match(output, /refusing to start/);
    assert.ok(output.includes(storeKey) && /not among the configured keys/.test(output), `the wrong key names the file: ${output}`);

    cell.cell.start('n3', { extraArgs: ['--encryption-key-file', ''] });
    assert.equal(await cell.cell.waitExit('n3', 20_000), 2);
    output = cell.cell.tail('n3', 30);
    assert.ok(output.includes(join(cell.dataDir, 'n3', 'db', 'state.mdb')) && /is encrypted/.test(output), `no key names the file: ${output}`);

    cell.cell.start('n3');
    await cell.cell.waitReady(30_000);

    // Rotation: a new key first in the file; n1 rewraps its store's key while it runs; status
    // names the ids; restarted with the new file it serves the old data, and new WAL segments
    // take the new key.
    const n1 = join(cell.dataDir, 'n1');
    const before = await baton(['keys', 'status', '--data-dir', n1, '--encryption-key-file', keyFile]);
    const oldId = /state\.mdb: key ([0-9a-f]{16})/.exec(before.stdout)?.[1];
    assert.ok(oldId !== undefined && before.stdout.includes(`key ${oldId} (active): in use`), before.stdout);
    const added = await baton(['keys', 'add', keyFile]);
    const newId = /added key ([0-9a-f]{16})/.exec(added.stdout)?.[1];
    assert.ok(newId !== undefined, added.stdout + added.stderr);
    const rotated = await baton(['keys', 'rotate', '--data-dir', n1, '--encryption-key-file', keyFile]);
    assert.match(rotated.stdout, new RegExp(`rewrapped ${oldId} -> ${newId}`));
    const after = await baton(['keys', 'status', '--data-dir', n1, '--encryption-key-file', keyFile]);
    assert.ok(after.stdout.includes(`state.mdb: key ${newId}`), after.stdout);
    assert.ok(after.stdout.includes(`key ${oldId} (old): in use`), `the WAL segments still name the old key: ${after.stdout}`);
    cell.cell.signal('n1', 'SIGTERM');
    await cell.cell.waitExit('n1', 20_000);
    cell.cell.start('n1');
    await cell.cell.waitReady(30_000);
    const old = await http(`${url}/v1/kv/${secretKey}-7`);
    assert.equal(old.body.kvs?.[0]?.value, `${secretValue}-7`, 'data written under the old key reads back');
  } finally {
    await cell.close();
    rmSync(keys, { recursive: true, force: true });
  }
});

test('the control: the same scan finds the key and value in a plaintext member\'s store and WAL', async () => {
  const cell = await startTestCell({ size: 1 });
  try {
    const url = cell.cell.clientUrl('n1');
    await putSurely(`${url}/v1/kv/${secretKey}`, secretValue);
    for (let i = 0; i < 200; i++) await putSurely(`${url}/v1/kv/${secretKey}-${i}`, `${secretValue}-${i}`);
    await cell.cell.stopAll();
    const files = scanned(join(cell.dataDir, 'n1'));
    assert.ok(files.some((path) => path.endsWith('state.mdb') && holds(path, secretKey) && holds(path, secretValue)), 'found in the store');
    assert.ok(files.some((path) => path.endsWith('.wal') && holds(path, secretValue)), 'found in the WAL');
  } finally {
    await cell.close();
  }
});
