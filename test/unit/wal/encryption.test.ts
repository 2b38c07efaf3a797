// Encrypted WAL segments (src/wal/seal.ts, docs/design/encryption.md) on real files: no plaintext
// entry bytes on disk (the same scan finds them in a plaintext WAL), recovery reads them back, a
// wrong key names the segment, a plaintext WAL gets an encrypted segment when encryption is turned
// on, a record altered along with its CRC (or two records of a write swapped) is refused by its
// write's tag, no nonce repeats across restarts that append to the same segment, and a segment an
// older build sealed record by record (format 2) still reads, its appends going to a new segment.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CorruptFileError } from '../../../src/base/errors.js';
import type { Entry } from '../../../src/raft/index.js';
import { keyringOf, segmentKeysOf, WrongKeyError } from '../../../src/keys/index.js';
import { RecordType, Wal, readFrame, frameHeaderBytes, segmentFileName, writeFrame } from '../../../src/wal/index.js';
import { encodeEntry, encodeHardState, encodeSegmentHeader } from '../../../src/wal/codec.js';
import { sealRecord } from '../../../src/wal/seal.js';
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

/**
 * Every nonce in the segment at `path`: a sealed write's (after the length in its batch record),
 * and those of the records a segment restates before its first write (their first 12 bytes).
 */
function nonces(path: string): string[] {
  const bytes = readFileSync(path);
  const found: string[] = [];
  let frame = readFrame(bytes, 0, 0);
  let inWrites = false;
  while (frame.kind === 'record') {
    if (frame.type === RecordType.batch) {
      inWrites = true;
      found.push(frame.payload.subarray(4, 16).toString('hex'));
    } else if (frame.type !== RecordType.segmentHeader && !inWrites) found.push(frame.payload.subarray(0, 12).toString('hex'));
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

test('a sealed record altered with its CRC fixed up is refused by its write\'s tag, naming file and offset', async () => {
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
    // Its write is sealed whole (seal.ts): the refusal names the write's start, its batch record.
    const batch = frames.filter((f) => f.offset < victim.offset && (readFrame(bytes, f.offset, f.seed) as { type?: number }).type === RecordType.batch).at(-1);
    assert.ok(batch !== undefined);
    await assert.rejects(Wal.open(dir, { ...sizes, keys }), (e: unknown) =>
      e instanceof CorruptFileError && e.path === path && e.offset === batch.offset && /write does not authenticate/.test(e.message));
  });
});

test('no nonce repeats in a segment appended to across restarts (random nonces: nothing to lose in a crash)', async () => {
  await withTempDir(async (dir) => {
    const keys = segmentKeysOf(keyringOf([randomBytes(32)]));
    for (let round = 0; round < 5; round++) await append(dir, keys, round * 10 + 1, 10);
    const paths = segments(dir);
    assert.equal(paths.length, 1, 'every restart appended to the same segment (one data key)');
    const all = nonces(paths[0] as string);
    assert.ok(all.length >= 50, `${all.length} nonces (a write each save, five restarts of ten)`);
    assert.equal(new Set(all).size, all.length, 'every nonce distinct');
  });
});

/**
 * A segment as a build before write sealing wrote it (format 2): every record sealed on its own,
 * each save a write opened by a 4-byte batch record. Entries `1..count`, one per write.
 */
function writeFormat2Segment(dir: string, keys: ReturnType<typeof segmentKeysOf>, count: number): string {
  const { key, wrapped } = keys.newKey();
  const frames: { type: number; payload: Uint8Array }[] = [
    { type: RecordType.segmentHeader, payload: encodeSegmentHeader({ seq: 1, firstIndex: 1, chainSeed: 0, writeBytesMax: sizes.writeBytesMax, wrappedKey: wrapped }) },
    { type: RecordType.hardState, payload: sealRecord(key, encodeHardState({ term: 0, vote: 0, commit: 0 })) },
  ];
  for (let index = 1; index <= count; index++) {
    const sealedEntry = sealRecord(key, encodeEntry(entry(index)));
    const sealedState = sealRecord(key, encodeHardState({ term: 1, vote: 1, commit: index }));
    const length = Buffer.alloc(4);
    length.writeUInt32LE(frameHeaderBytes * 3 + 4 + sealedEntry.length + sealedState.length, 0);
    frames.push({ type: RecordType.batch, payload: length }, { type: RecordType.entry, payload: sealedEntry }, { type: RecordType.hardState, payload: sealedState });
  }
  const bytes = Buffer.alloc(sizes.segmentBytes);
  let offset = 0;
  let seed = 0;
  for (const frame of frames) {
    seed = writeFrame(bytes, offset, { type: frame.type as RecordType, payload: frame.payload, seed });
    offset += frameHeaderBytes + frame.payload.length;
  }
  mkdirSync(join(dir, 'wal'), { recursive: true });
  const path = join(dir, 'wal', segmentFileName(1, 1));
  writeFileSync(path, bytes);
  return path;
}

test('a segment an older build sealed record by record (format 2) reads back; appends go to a new write-sealed segment', async () => {
  await withTempDir(async (dir) => {
    const keys = segmentKeysOf(keyringOf([randomBytes(32)]));
    const old = writeFormat2Segment(dir, keys, 5);
    assert.equal(readFileSync(old).readUInt32LE(frameHeaderBytes + 8), 2, 'the hand-made segment is format 2');
    await append(dir, keys, 6, 5);
    const paths = segments(dir);
    assert.equal(paths.length, 2, 'the format-2 tail got no more records');
    assert.equal(readFileSync(paths[1] as string).readUInt32LE(frameHeaderBytes + 8), 3, 'the new segment seals its writes (format 3)');
    for (const path of paths) assert.equal(readFileSync(path).includes(secret), false);
    const { wal, recovered } = await Wal.open(dir, { ...sizes, keys });
    assert.deepEqual(recovered.entries.map((e) => e.index), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.deepEqual(Buffer.from(recovered.entries[2]?.data ?? []), Buffer.concat([secret, Buffer.from('#3')]));
    await wal.close();
  });
});

test('two records of one sealed write swapped (checksums fixed up) fail the write\'s tag', async () => {
  await withTempDir(async (dir) => {
    const keys = segmentKeysOf(keyringOf([randomBytes(32)]));
    const { wal } = await Wal.open(dir, { ...sizes, keys, logger: new MemoryLogger() });
    // Two entries of one length in one save: one write holding both.
    await wal.save([entry(1), { ...entry(2), data: entry(1).data }], null);
    await wal.save([entry(3)], null);
    await wal.close();
    const path = segments(dir)[0] as string;
    const bytes = readFileSync(path);
    const frames: { offset: number; seed: number; type: number; length: number }[] = [];
    let seed = 0;
    let offset = 0;
    for (let frame = readFrame(bytes, 0, 0); frame.kind === 'record'; frame = readFrame(bytes, offset, seed)) {
      frames.push({ offset, seed, type: frame.type, length: frame.payload.length });
      seed = frame.crc;
      offset = frame.end;
    }
    const [a, b] = frames.filter((f) => f.type === RecordType.entry);
    assert.ok(a !== undefined && b !== undefined && a.length === b.length && b.offset === a.offset + frameHeaderBytes + a.length);
    const payloadA = Buffer.from(bytes.subarray(a.offset + frameHeaderBytes, a.offset + frameHeaderBytes + a.length));
    bytes.copy(bytes, a.offset + frameHeaderBytes, b.offset + frameHeaderBytes, b.offset + frameHeaderBytes + b.length);
    payloadA.copy(bytes, b.offset + frameHeaderBytes);
    let chain = a.seed;
    for (const f of frames.filter((x) => x.offset >= a.offset)) {
      const headerCrc = crc32(bytes.subarray(f.offset + 4, f.offset + 12), chain);
      bytes.writeUInt32LE(headerCrc, f.offset + 12);
      chain = crc32(bytes.subarray(f.offset + frameHeaderBytes, f.offset + frameHeaderBytes + f.length), headerCrc);
      bytes.writeUInt32LE(chain, f.offset);
    }
    writeFileSync(path, bytes);
    const batch = frames.filter((f) => f.offset < a.offset && f.type === RecordType.batch).at(-1);
    await assert.rejects(Wal.open(dir, { ...sizes, keys }), (e: unknown) =>
      e instanceof CorruptFileError && e.path === path && e.offset === batch?.offset && /write does not authenticate/.test(e.message));
  });
});
