// Encryption at rest on a real 3-node cell (docs/design/encryption.md): the members' stores hold
// no plaintext key or value (a scan of every state.mdb, key file and checkpoint for a known key and
// value; the same scan finds them in the WAL, which is not encrypted yet: that is the scan's
// control), the cell restarts and serves them, and a member given the wrong key, or none, refuses
// to start naming the file it could not decrypt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { http, putSurely, startTestCell } from './harness.js';

const secretKey = 'enc-probe-key-5d21c9';
const secretValue = 'enc-probe-value-8e07f3aa41';

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

function holds(path: string, text: string): boolean {
  return readFileSync(path).includes(Buffer.from(text));
}

test('an encrypted cell keeps no plaintext key or value in its stores, restarts, and refuses a wrong or missing key naming the file', async () => {
  const keys = mkdtempSync(join(tmpdir(), 'baton-kek-'));
  const keyFile = join(keys, 'kek.hex');
  const wrongKeyFile = join(keys, 'wrong.hex');
  writeFileSync(keyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  writeFileSync(wrongKeyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  const cell = await startTestCell({ size: 3, extraArgs: ['--encryption-key-file', keyFile] });
  try {
    const url = cell.cell.clientUrl('n1');
    await putSurely(`${url}/v1/kv/${secretKey}`, secretValue);
    for (let i = 0; i < 200; i++) await putSurely(`${url}/v1/kv/${secretKey}-${i}`, `${secretValue}-${i}`);
    await cell.cell.stopAll();

    let walControl = 0;
    for (const name of cell.names) {
      const member = join(cell.dataDir, name);
      const storeFiles = filesUnder(join(member, 'db')).filter((path) => !path.endsWith('-lock'));
      assert.ok(storeFiles.some((path) => path.endsWith('state.mdb')) && storeFiles.some((path) => path.endsWith('state.key')));
      for (const path of storeFiles) {
        assert.equal(holds(path, secretKey), false, `${path} holds the key in plaintext`);
        assert.equal(holds(path, secretValue), false, `${path} holds the value in plaintext`);
      }
      walControl += filesUnder(join(member, 'wal')).filter((path) => holds(path, secretValue)).length;
    }
    assert.ok(walControl > 0, 'the scan finds the value where it is not encrypted (the WAL): it would find it in a store');

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
  } finally {
    await cell.close();
    rmSync(keys, { recursive: true, force: true });
  }
});
