// Raft snapshot files encrypted (src/keys/block-seal.ts through src/snap/store.ts), on real files:
// a sealed file round-trips and holds no plaintext; read without the key or with the wrong one it
// is refused naming the file; a block altered with its CRC fixed up fails to authenticate at the
// block's offset (the CRC chain alone would pass it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { CorruptFileError } from '../../../src/base/errors.js';
import { ConfigError } from '../../../src/base/config-error.js';
import { keyringOf, WrongKeyError } from '../../../src/keys/index.js';
import { SnapshotStore } from '../../../src/snap/index.js';

const meta = { index: 42, term: 3, confState: { voters: [1, 2, 3], votersOutgoing: [], learners: [] } };
const plain = Buffer.from(Array.from({ length: 400 }, (_, i) => `snap-secret-${i};`).join(''));

test('encrypted snapshot files: round trip, no plaintext, key refusals name the file, an altered block is refused at its offset', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-snapenc-'));
  try {
    const keyring = keyringOf([randomBytes(32)]);
    const store = new SnapshotStore(dir, { keyring, blockBytes: 1000 });
    await store.init();
    const path = await store.save(meta, plain);
    const bytes = readFileSync(path);
    assert.equal(bytes.includes(Buffer.from('snap-secret')), false, 'no plaintext in the file');
    assert.deepEqual(Buffer.from((await store.load(path)).data), plain);
    assert.deepEqual(Buffer.concat([...store.dataOf(meta)]), plain);
    assert.deepEqual(await store.verify(path), meta, 'checking a file needs no key');

    const bare = new SnapshotStore(dir);
    await assert.rejects(bare.load(path), (e: Error) => e instanceof ConfigError && e.message.includes(path) && e.message.includes(keyring.active.id));
    const wrong = new SnapshotStore(dir, { keyring: keyringOf([randomBytes(32)]) });
    assert.throws(() => [...wrong.dataOf(meta)], (e: Error) => e instanceof WrongKeyError && e.message.includes(path));

    // Alter the second block's data and fix up the CRC chain from there on: only GCM can tell.
    const headerEnd = 24 + bytes.readUInt32LE(12);
    const blockBytes = 8 + 1000 + 16;
    const second = headerEnd + blockBytes;
    const altered = Buffer.from(bytes);
    altered[second + 8 + 5] = (altered[second + 8 + 5] as number) ^ 1;
    let crc = altered.readUInt32LE(headerEnd + 4); // the chain after block 0
    for (let at = second; ; ) {
      const length = altered.readUInt32LE(at);
      crc = crc32(altered.subarray(at, at + 4), crc);
      if (length === 0) {
        altered.writeUInt32LE(crc32(altered.subarray(at + 8, at + 16), crc), at + 4);
        break;
      }
      crc = crc32(altered.subarray(at + 8, at + 8 + length), crc);
      altered.writeUInt32LE(crc, at + 4);
      at += 8 + length;
    }
    writeFileSync(path, altered);
    await assert.rejects(store.load(path), (e: Error) => e instanceof CorruptFileError && e.path === path && e.offset === second && /block 1 does not authenticate/.test(e.reason));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
