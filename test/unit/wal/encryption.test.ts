// Encrypted WAL segments (src/wal/seal.ts, docs/design/encryption.md) on real files: no plaintext
// entry bytes on disk (the same scan finds them in a plaintext WAL), recovery reads them back, a
// wrong key names the segment, a plaintext WAL gets an encrypted segment when encryption is turned
// on, a record altered along with its CRC is refused by its tag, and no nonce repeats across
// restarts that append to the same segment.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CorruptFileError } from '../../../src/base/errors.js';
import type { Entry } from '../../../src/raft/index.js';
import { keyringOf, segmentKeysOf, WrongKeyError } from '../../../src/keys/index.js';
import { RecordType, Wal, readFrame, frameHeaderBytes } from '../../../src/wal/index.js';
import { MemoryLogger, withTempDir } from './helpers.js';

const secret = Buffer.from('wal-probe-value-c0ffee42');
const sizes = { segmentBytes: 64 * 1024, writeBytesMax: 8192, executor: 'inline' as const };

function entry(index: number): Entry {
  return { index, term: 1, type: 0, data: new Uint8Array(Buffer.concat([secret, Buffer.from(`#${index}`)])) };
}

async function append(dir: string, keys: ReturnType<typeof segmentKeysOf> | null, from: number, count: number): Promise<void> {
  const { wal } = await Wal.open(dir, { ...sizes, keys, logger: new MemoryLogger() });
  for (let i = 0; i < count; i++) await wal.save([entry(from + i)], { term: 1, vote: 1, commit: from + i });
  await wal.close();
}

function segments(dir: string): string[] {
  return readdirSync(join(dir, 'wal')).filter((name) => name.endsWith('.wal')).sort().map((name) => join(dir, 'wal', name));
}

/** Every sealed record's nonce in the segment at `path` (its first 12 payload bytes). */
function nonces(path: string): string[] {
  const bytes = readFileSync(path);
  const found: string[] = [];
  let frame = readFrame(bytes, 0, 0);
  while (frame.kind === 'record') {
    if (frame.type !== RecordType.batch && frame.type !== RecordType.segmentHeader) found.push(frame.payload.subarray(0, 12).toString('hex'));
    const next = readFrame(bytes, frame.end, frame.crc);
    if (next.kind !== 'record') break;
    frame = next;
  }
  return found;
}

test('encrypted segments hold no entry bytes in plaintext and recover them; a plaintext WAL does (the control)', async () => {
  await withTempDir(async (dir) => {
    const keys = segmentKeysOf(keyringOf([randomBytes(32)]));
    await append(join(dir, 'enc'), keys, 1, 40);
    await append(join(dir, 'plain'), null, 1, 40);
    for (const path of segments(join(dir, 'enc'))) assert.equal(readFileSync(path).includes(secret), false, `${path} holds plaintext`);
    assert.ok(segments(join(dir, 'plain')).some((path) => readFileSync(path).includes(secret)), 'the scan finds it in plaintext');
    const { wal, recovered } = await Wal.open(join(dir, 'enc'), { ...sizes, keys });
    assert.equal(recovered.entries.length, 40);
    assert.deepEqual(Buffer.from(recovered.entries[39]?.data ?? []), Buffer.concat([secret, Buffer.from('#40')]));
    assert.equal(recovered.hardState.commit, 40);
    await wal.close();
  });
});

test('a wrong or missing key refuses the WAL naming the segment', async () => {
  await withTempDir(async (dir) => {
    await append(dir, segmentKeysOf(keyringOf([randomBytes(32)])), 1, 5);
    const path = segments(dir)[0] as string;
    await assert.rejects(Wal.open(dir, { ...sizes, keys: segmentKeysOf(keyringOf([randomBytes(32)])) }),
      (e: unknown) => e instanceof WrongKeyError && e.message.includes(path));
    await assert.rejects(Wal.open(dir, { ...sizes }), (e: unknown) => e instanceof Error && e.message.includes(path) && /is encrypted/.test(e.message));
  });
});

test('turning encryption on: the plaintext tail stays readable and appends go to a new encrypted segment', async () => {
  await withTempDir(async (dir) => {
    const keys = segmentKeysOf(keyringOf([randomBytes(32)]));
    await append(dir, null, 1, 5);
    await append(dir, keys, 6, 5);
    const paths = segments(dir);
    assert.equal(paths.length, 2);
    assert.equal(readFileSync(paths[1] as string).includes(secret), false);
    const { wal, recovered } = await Wal.open(dir, { ...sizes, keys });
    assert.deepEqual(recovered.entries.map((e) => e.index), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    await wal.close();
  });
});

test('a sealed record altered with its CRC fixed up is refused by its tag, naming file and offset', async () => {
  await withTempDir(async (dir) => {
    const keys = segmentKeysOf(keyringOf([randomBytes(32)]));
    await append(dir, keys, 1, 5);
    const path = segments(dir)[0] as string;
    const bytes = readFileSync(path);
    // The third record after the header: flip a ciphertext byte, then recompute the chain from it.
    let frame = readFrame(bytes, 0, 0);
    const frames: { offset: number; seed: number }[] = [];
    let seed = 0;
    let offset = 0;
    while (frame.kind === 'record') {
      frames.push({ offset, seed });
      seed = frame.crc;
      offset = frame.end;
      frame = readFrame(bytes, offset, seed);
    }
    const victim = frames.find((f, i) => i > 0 && readFrame(bytes, f.offset, f.seed).kind === 'record' && (readFrame(bytes, f.offset, f.seed) as { type: number }).type === RecordType.entry);
    assert.ok(victim !== undefined);
    const at = victim.offset + frameHeaderBytes + 14;
    bytes[at] = (bytes[at] ?? 0) ^ 0x01;
    let chain = victim.seed;
    for (const f of frames.filter((x) => x.offset >= victim.offset)) {
      const length = bytes.readUInt32LE(f.offset + 4);
      const headerCrc = crc32(bytes.subarray(f.offset + 4, f.offset + 12), chain);
      bytes.writeUInt32LE(headerCrc, f.offset + 12);
      chain = crc32(bytes.subarray(f.offset + frameHeaderBytes, f.offset + frameHeaderBytes + length), headerCrc);
      bytes.writeUInt32LE(chain, f.offset);
    }
    writeFileSync(path, bytes);
    await assert.rejects(Wal.open(dir, { ...sizes, keys }), (e: unknown) =>
      e instanceof CorruptFileError && e.path === path && e.offset === victim.offset && /does not authenticate/.test(e.message));
  });
});

test('no nonce repeats in a segment appended to across restarts (random nonces: nothing to lose in a crash)', async () => {
  await withTempDir(async (dir) => {
    const keys = segmentKeysOf(keyringOf([randomBytes(32)]));
    for (let round = 0; round < 5; round++) await append(dir, keys, round * 10 + 1, 10);
    const paths = segments(dir);
    assert.equal(paths.length, 1, 'every restart appended to the same segment (one data key)');
    const all = nonces(paths[0] as string);
    assert.ok(all.length >= 100, `${all.length} sealed records`);
    assert.equal(new Set(all).size, all.length, 'every nonce distinct');
  });
});
