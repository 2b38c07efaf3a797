// Sealed (encrypted) backup files, on real files: round trip, no plaintext on disk, the wrong or a
// missing key refused naming the file, and damage (a flipped byte, a cut at a chunk boundary, a
// chunk swapped) named by file and offset.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CorruptFileError } from '../../../src/base/errors.js';
import { ConfigError } from '../../../src/base/config-error.js';
import { keyringOf, openSealedFile, sealBytes, WrongKeyError } from '../../../src/keys/index.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-sealed-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
const keyring = keyringOf([randomBytes(32)]);
const chunk = 1000;
// A recognisable plaintext of a few chunks (the last one partial).
const plain = Buffer.from(Array.from({ length: 350 }, (_, i) => `secret-value-${i};`).join(''));

function sealedFile(name: string): string {
  const path = join(dir, name);
  writeFileSync(path, sealBytes(keyring, 'test', plain, chunk));
  return path;
}

const readAll = (path: string, ring = keyring): Buffer => Buffer.concat([...openSealedFile(path, ring).plaintext()]);

test('round trip; the file holds no plaintext and names its key id', () => {
  const path = sealedFile('ok.seal');
  const bytes = readFileSync(path);
  assert.equal(bytes.includes(Buffer.from('secret-value')), false);
  assert.deepEqual(readAll(path), plain);
  assert.equal(openSealedFile(path, keyring).kekId, keyring.active.id);
  // An empty file seals to a header and one empty last chunk.
  const empty = join(dir, 'empty.seal');
  writeFileSync(empty, sealBytes(keyring, 'test', Buffer.alloc(0), chunk));
  assert.equal(readAll(empty).length, 0);
});

test('a missing or wrong key is refused naming the file; a rotated keyring still reads it', () => {
  const path = sealedFile('keys.seal');
  assert.throws(() => openSealedFile(path, null), (e: Error) => e instanceof ConfigError && e.message.includes(path) && e.message.includes(keyring.active.id));
  const other = keyringOf([randomBytes(32)]);
  assert.throws(() => openSealedFile(path, other), (e: Error) => e instanceof WrongKeyError && e.message.includes(path) && e.message.includes('not among the configured keys'));
  const rotated = keyringOf([randomBytes(32), keyring.active.key]);
  assert.deepEqual(readAll(path, rotated), plain);
});

test('damage is named by file and offset: a flipped byte, a cut at a chunk boundary, two chunks swapped', () => {
  const good = readFileSync(sealedFile('base.seal'));
  const headerBytes = 16 + good.readUInt32LE(12);
  const sealedChunk = 4 + chunk + 16;
  const expectCorrupt = (name: string, bytes: Buffer, offset: number, reason: RegExp): void => {
    const path = join(dir, name);
    writeFileSync(path, bytes);
    assert.throws(() => readAll(path), (e: Error) => e instanceof CorruptFileError && e.path === path && e.offset === offset && reason.test(e.reason),
      `${name}: expected offset ${offset}`);
  };
  const flipped = Buffer.from(good);
  const at = headerBytes + sealedChunk * 2 + 100;
  flipped[at] = (flipped[at] as number) ^ 1;
  expectCorrupt('flipped.seal', flipped, headerBytes + sealedChunk * 2, /chunk 2 does not authenticate/);
  expectCorrupt('cut.seal', good.subarray(0, headerBytes + sealedChunk * 3), headerBytes + sealedChunk * 3, /truncated/);
  const swapped = Buffer.concat([good.subarray(0, headerBytes), good.subarray(headerBytes + sealedChunk, headerBytes + 2 * sealedChunk),
    good.subarray(headerBytes, headerBytes + sealedChunk), good.subarray(headerBytes + 2 * sealedChunk)]);
  expectCorrupt('swapped.seal', swapped, headerBytes, /chunk 0 does not authenticate/);
  // The header's key id altered: the wrap no longer matches any key (refused as a wrong key, naming the file).
  const json = good.subarray(16, headerBytes).toString().replace(keyring.active.id, '0000000000000000');
  const relabelled = join(dir, 'relabelled.seal');
  writeFileSync(relabelled, Buffer.concat([good.subarray(0, 16), Buffer.from(json), good.subarray(headerBytes)]));
  assert.throws(() => openSealedFile(relabelled, keyring), (e: Error) => e instanceof WrongKeyError && e.message.includes(relabelled));
});
