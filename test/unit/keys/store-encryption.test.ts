// Encryption at rest of the LMDB store (src/keys, docs/design/encryption.md), on real files and
// real LMDB: what an encrypted store file reveals (a scan for a known key and value, with the
// plaintext store as the control that shows the scan finds them), the refusals that name the
// file, rotation of the key-encryption key, and that no page nonce (page number, txn id) comes
// back after a crash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { keyringOf, loadKeyring, openStoreKey, rewrapStoreKey, storeKeyId, WrongKeyError, parseKeys } from '../../../src/keys/index.js';
import { ConfigError } from '../../../src/base/config-error.js';
import { LmdbEngine } from '../../../src/storage/index.js';
import { withTempDir } from '../storage/temp-dir.js';

const secretKey = Buffer.from('scan-me-key-7f3a9c');
const secretValue = Buffer.from('scan-me-value-2b8e41d0');

function openEncrypted(directory: string, keys: Buffer[], bootId = 'boot-1'): LmdbEngine {
  mkdirSync(directory, { recursive: true });
  const key = openStoreKey(directory, 'state.mdb', keyringOf(keys));
  assert.ok(key !== null);
  return LmdbEngine.open({ directory, commits: 'deferred', bootId, encryptionKey: key.lmdbKey });
}

function fill(engine: LmdbEngine, rounds: number): void {
  for (let i = 0; i < rounds; i++) {
    engine.write((w) => {
      w.put(secretKey, secretValue);
      w.put(Buffer.from(`${secretKey.toString()}-${i}`), Buffer.concat([secretValue, Buffer.from(`-${i}`)]));
    });
  }
}

test('an encrypted store file holds neither a known key nor its value; the same scan finds both in a plaintext store', async () => {
  await withTempDir(async (dir) => {
    const kek = randomBytes(32);
    const encrypted = openEncrypted(join(dir, 'enc'), [kek]);
    fill(encrypted, 200);
    await encrypted.checkpoint();
    assert.deepEqual(Buffer.from(encrypted.get(secretKey) ?? []), secretValue, 'it reads back');
    await encrypted.close();
    const plain = LmdbEngine.open({ directory: join(dir, 'plain'), commits: 'deferred', bootId: 'boot-1' });
    fill(plain, 200);
    await plain.checkpoint();
    await plain.close();
    for (const name of ['state.mdb', 'state.key', 'checkpoint']) {
      const bytes = readFileSync(join(dir, 'enc', name));
      assert.equal(bytes.includes(secretKey), false, `${name}: no plaintext key`);
      assert.equal(bytes.includes(secretValue), false, `${name}: no plaintext value`);
      assert.equal(bytes.includes(kek), false, `${name}: no key-encryption key`);
    }
    const control = readFileSync(join(dir, 'plain', 'state.mdb'));
    assert.ok(control.includes(secretKey) && control.includes(secretValue), 'the scan finds them in plaintext');
    // Reopened with the key: the same content.
    const reopened = openEncrypted(join(dir, 'enc'), [kek], 'boot-1');
    assert.deepEqual(Buffer.from(reopened.get(Buffer.from(`${secretKey.toString()}-199`)) ?? []), Buffer.concat([secretValue, Buffer.from('-199')]));
    await reopened.close();
  });
});

test('a wrong, missing or unexpected key refuses the store and names the file', async () => {
  await withTempDir(async (dir) => {
    const db = join(dir, 'db');
    const engine = openEncrypted(db, [randomBytes(32)]);
    fill(engine, 5);
    await engine.close();
    assert.throws(() => openStoreKey(db, 'state.mdb', keyringOf([randomBytes(32)])),
      (e: unknown) => e instanceof WrongKeyError && e.message.includes(join(db, 'state.key')) && /not among the configured keys/.test(e.message));
    assert.throws(() => openStoreKey(db, 'state.mdb', null),
      (e: unknown) => e instanceof ConfigError && e.message.includes(join(db, 'state.mdb')) && /is encrypted/.test(e.message));
    const plain = join(dir, 'plain');
    const p = LmdbEngine.open({ directory: plain });
    p.write((w) => w.put(secretKey, secretValue));
    await p.close();
    assert.throws(() => openStoreKey(plain, 'state.mdb', keyringOf([randomBytes(32)])),
      (e: unknown) => e instanceof ConfigError && e.message.includes(join(plain, 'state.mdb')) && /without encryption/.test(e.message));
    assert.equal(openStoreKey(plain, 'state.mdb', null), null, 'a plaintext store opens as before without a key');
    // The default (--encryption-store-cipher none): a keyring leaves a plaintext store plaintext,
    // and an encrypted one is still opened encrypted.
    assert.equal(openStoreKey(plain, 'state.mdb', keyringOf([randomBytes(32)]), false), null);
    assert.throws(() => openStoreKey(db, 'state.mdb', null, false), /is encrypted/);
  });
});

test('rotation: a new active key rewraps the data key; old data stays readable; the old key alone is then refused', async () => {
  await withTempDir(async (dir) => {
    const db = join(dir, 'db');
    const [oldKek, newKek] = [randomBytes(32), randomBytes(32)];
    const engine = openEncrypted(db, [oldKek]);
    fill(engine, 20);
    await engine.close();
    const oldId = keyringOf([oldKek]).active.id;
    const newId = keyringOf([newKek]).active.id;
    assert.equal(storeKeyId(db), oldId);
    // Online: the key file is rewritten by rename; the data key (and so state.mdb) is unchanged.
    assert.deepEqual(rewrapStoreKey(db, keyringOf([newKek, oldKek])), { from: oldId, to: newId });
    assert.equal(storeKeyId(db), newId, 'status names the new key');
    const reopened = openEncrypted(db, [newKek]);
    assert.deepEqual(Buffer.from(reopened.get(secretKey) ?? []), secretValue, 'old data readable under the new key alone');
    await reopened.close();
    assert.throws(() => openStoreKey(db, 'state.mdb', keyringOf([oldKek])), WrongKeyError, 'the old key is retired');
  });
});

test('a key command (the KMS plugin point) gives the same keyring as the file; a failing one names the command', () => {
  const key = randomBytes(32).toString('hex');
  assert.equal(loadKeyring({ command: `printf '%s\\n' ${key}` }).active.id, keyringOf([Buffer.from(key, 'hex')]).active.id);
  assert.throws(() => loadKeyring({ command: 'exit 3' }), (e: unknown) => e instanceof ConfigError && /--encryption-key-command "exit 3" failed/.test(e.message));
  assert.throws(() => loadKeyring({ command: 'echo not-a-key' }), (e: unknown) => e instanceof ConfigError && /64 hex digits/.test(e.message));
});

test('key files: hex lines (active first) or 32 raw bytes', () => {
  const [a, b] = [randomBytes(32), randomBytes(32)];
  assert.deepEqual(parseKeys(Buffer.from(`# active first\n${a.toString('hex')}\n${b.toString('hex')}\n`)), [a, b]);
  assert.deepEqual(parseKeys(a), [a]);
  assert.throws(() => parseKeys(Buffer.from('short')));
});

/** Every page's (page number, txn id) header, which LMDB's cipher leaves plaintext and uses as the nonce. */
function pageNonces(path: string): Map<string, Buffer> {
  const bytes = readFileSync(path);
  const pages = new Map<string, Buffer>();
  for (let at = 2 * 8192; at + 8192 <= bytes.length; at += 8192) {
    const txnId = bytes.readBigUInt64LE(at + 8);
    if (txnId === 0n) continue;
    pages.set(`${bytes.readBigUInt64LE(at)}:${txnId}`, bytes.subarray(at + 16, at + 8192));
  }
  return pages;
}

test('no (page, txn id) nonce is written twice with different content across a process crash and an OS crash', async () => {
  await withTempDir(async (dir) => {
    const kek = randomBytes(32);
    const live = join(dir, 'live');
    const engine = openEncrypted(live, [kek]);
    fill(engine, 50);
    await engine.checkpoint();
    fill(engine, 50); // after the checkpoint: on disk, but an OS crash goes back before them
    const before = pageNonces(join(live, 'state.mdb'));
    // The files as a crash leaves them, reopened by a process of the same boot and of a new one.
    for (const [name, bootId] of [['process', 'boot-1'], ['os', 'boot-2']] as const) {
      const copy = join(dir, name);
      mkdirSync(copy);
      for (const file of ['state.mdb', 'state.key', 'checkpoint', 'open-since-boot']) copyFileSync(join(live, file), join(copy, file));
      const reopened = openEncrypted(copy, [kek], bootId);
      if (name === 'os') assert.equal(reopened.afterReboot, 'restored');
      fill(reopened, 100);
      await reopened.checkpoint();
      await reopened.close();
      for (const [nonce, content] of pageNonces(join(copy, 'state.mdb'))) {
        const earlier = before.get(nonce);
        if (earlier !== undefined) assert.ok(earlier.equals(content), `${name} crash: nonce ${nonce} reused for other content`);
      }
    }
  });
});
