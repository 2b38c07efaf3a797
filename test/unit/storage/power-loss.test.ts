// Power loss with deferred commits and checkpoints. After a checkpoint the disk holds the synced
// file; later deferred commits reach the disk in any order, block by block, or not at all, when
// the power goes. Each trial builds such a disk image (every 4 KiB block taken either from the
// file as the checkpoint's sync left it or from the file as it was at the crash, the meta pages
// included) and reopens it in a "new boot": the store must hold exactly what it held at the
// checkpoint, and accept writes afterwards. The later commits overwrite, delete and add keys of
// every size (pages freed and reused, overflow pages), so a checkpointed page that LMDB reused,
// or a meta page naming an unsynced tree, shows up as a wrong or unreadable store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SeededRandom, chance, randomInt, type Random } from '../../../src/base/random.js';
import type { KvEngine } from '../../../src/mvcc/index.js';
import { LmdbEngine } from '../../../src/storage/index.js';
import { withTempDir } from './temp-dir.js';

const blockBytes = 4096;
const all = { start: Uint8Array.of(0x00), end: Uint8Array.of(0xff, 0xff) };

function contentHash(engine: KvEngine): string {
  const hash = createHash('sha256');
  let count = 0;
  for (const { key, value } of engine.range(all)) {
    hash.update(key).update('=').update(value).update(';');
    count++;
  }
  return `${count}:${hash.digest('hex').slice(0, 16)}`;
}

/** Random commits: overwrites, deletes and new keys, values from 10 bytes to 3 pages. */
function writeCommits(engine: LmdbEngine, random: Random, commits: number): void {
  for (let c = 0; c < commits; c++) {
    engine.write((writer) => {
      const ops = randomInt(random, 1, 40);
      for (let i = 0; i < ops; i++) {
        const key = Buffer.from(`k${randomInt(random, 0, 1500).toString().padStart(5, '0')}`);
        if (chance(random, 0.25)) {
          writer.delete(key);
        } else {
          const size = chance(random, 0.1) ? randomInt(random, 5000, 24000) : randomInt(random, 10, 600);
          writer.put(key, Buffer.alloc(size, randomInt(random, 0, 255)));
        }
      }
    });
  }
}

/** A disk after power loss: each block from `synced` or `crashed` (beyond `synced`: from `crashed` or zeros). */
function powerLossImage(synced: Buffer, crashed: Buffer, random: Random, pickCrashed: number): Buffer {
  const image = Buffer.alloc(crashed.length);
  for (let at = 0; at < crashed.length; at += blockBytes) {
    const end = Math.min(at + blockBytes, crashed.length);
    if (chance(random, pickCrashed)) crashed.copy(image, at, at, end);
    else if (at < synced.length) synced.copy(image, at, at, Math.min(end, synced.length));
  }
  return image;
}

// Every trial runs on a plaintext store and on one encrypted by LMDB's page cipher (keys/store-key.ts):
// the checkpoints read and restore the meta pages, which the cipher leaves in plaintext.
const ciphers = [
  { name: 'plaintext', options: {} },
  { name: 'encrypted', options: { encryptionKey: 'power-loss-test-key-0123456789ab' } },
] as const;

for (const cipher of ciphers) test(`after power loss a deferred-commit store reopens at its last checkpoint, whatever reached the disk (${cipher.name})`, async () => {
  await withTempDir(async (dir) => {
    const random = new SeededRandom(2026n);
    const live = join(dir, 'live');
    const engine = LmdbEngine.open({ ...cipher.options, directory: live, commits: 'deferred', bootId: 'boot-1' });
    try {
      writeCommits(engine, random, 300);
      for (let round = 0; round < 2; round++) {
        writeCommits(engine, random, 100);
        await engine.checkpoint();
        // What the disk holds for certain now: the synced file and checkpoint record.
        const synced = readFileSync(join(live, 'state.mdb'));
        const record = readFileSync(join(live, 'checkpoint'));
        const expected = contentHash(engine);
        writeCommits(engine, random, 150); // never synced
        const crashed = readFileSync(join(live, 'state.mdb'));
        assert.notEqual(contentHash(engine), expected, 'the later commits changed the store');
        const trials = [0, 1, 0.5, 0.5, 0.1, 0.9];
        for (const [trial, pickCrashed] of trials.entries()) {
          const disk = join(dir, `disk-${round}-${trial}`);
          mkdirSync(disk);
          const image = powerLossImage(synced, crashed, random, pickCrashed);
          if (trial === 0) crashed.subarray(0, 16384).copy(image, 0); // only the new meta pages arrived
          writeFileSync(join(disk, 'state.mdb'), image);
          writeFileSync(join(disk, 'checkpoint'), record);
          writeFileSync(join(disk, 'open-since-boot'), 'boot-1\n');
          const reopened = LmdbEngine.open({ ...cipher.options, directory: disk, commits: 'deferred', bootId: 'boot-2', logger: { warn: () => {} } });
          try {
            assert.equal(reopened.afterReboot, 'restored');
            assert.equal(contentHash(reopened), expected, `round ${round} trial ${trial}: the checkpointed content`);
            writeCommits(reopened, random, 20);
            await reopened.checkpoint();
          } finally {
            await reopened.close();
          }
        }
      }
    } finally {
      await engine.close();
    }
  });
});

for (const cipher of ciphers) test(`a process crash keeps every deferred commit; the reopened store checkpoints before its first write (${cipher.name})`, async () => {
  await withTempDir(async (dir) => {
    const random = new SeededRandom(7n);
    const live = join(dir, 'live');
    const engine = LmdbEngine.open({ ...cipher.options, directory: live, commits: 'deferred', bootId: 'boot-1' });
    writeCommits(engine, random, 200);
    await engine.checkpoint();
    writeCommits(engine, random, 100);
    const expected = contentHash(engine);
    // The files as a killed process leaves them: the page cache has every commit.
    const copy = join(dir, 'copy');
    mkdirSync(copy);
    for (const name of ['state.mdb', 'checkpoint', 'open-since-boot']) copyFileSync(join(live, name), join(copy, name));
    await engine.close();
    const reopened = LmdbEngine.open({ ...cipher.options, directory: copy, commits: 'deferred', bootId: 'boot-1' });
    try {
      assert.equal(reopened.afterReboot, 'none');
      assert.equal(contentHash(reopened), expected, 'nothing lost in a process crash');
      // The open synced and pinned what it found; the dead process's pin is gone, so without
      // that, the commits below could overwrite the old checkpoint's pages.
      const synced = readFileSync(join(copy, 'state.mdb'));
      const record = readFileSync(join(copy, 'checkpoint'));
      writeCommits(reopened, random, 150);
      const crashed = readFileSync(join(copy, 'state.mdb'));
      for (const [trial, pickCrashed] of [1, 0.5, 0.2].entries()) {
        const disk = join(dir, `disk-${trial}`);
        mkdirSync(disk);
        writeFileSync(join(disk, 'state.mdb'), powerLossImage(synced, crashed, random, pickCrashed));
        writeFileSync(join(disk, 'checkpoint'), record);
        writeFileSync(join(disk, 'open-since-boot'), 'boot-1\n');
        const afterReboot = LmdbEngine.open({ ...cipher.options, directory: disk, commits: 'deferred', bootId: 'boot-2', logger: { warn: () => {} } });
        try {
          assert.equal(afterReboot.afterReboot, 'restored');
          assert.equal(contentHash(afterReboot), expected, `trial ${trial}: what the reopened store found`);
        } finally {
          await afterReboot.close();
        }
      }
    } finally {
      await reopened.close();
    }
  });
});
