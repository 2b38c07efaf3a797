// The snapshot file format, pure. Layout:
//   header  magic "BATNSNAP" | u32 version | u32 metaBytes | u32 blockBytesMax | u32 headerCrc
//   meta    JSON {index, term, confState[, sealed]}            (headerCrc covers header + meta)
//   blocks  u32 dataBytes (1..blockBytesMax) | u32 crc | data   (crc chained from the previous)
//   end     u32 0 | u32 crc | u64 totalDataBytes
// Block CRCs let a reader name the damaged block's offset; the chain (seeded by the header CRC)
// catches blocks that are reordered, dropped or spliced in from another snapshot file.
// Encrypted (a keyring given to the store): `sealed` holds the file's wrapped data key and every
// block's data is sealed (src/keys/block-seal.ts); the CRCs cover the sealed bytes, so checking a
// file needs no key, and only a reader of its data (onData) unseals it.
import { snapshotMetaBytesMax } from '../base/limits.js';
import { crc32 } from 'node:zlib';
import { assert } from '../base/assert.js';
import { CorruptFileError } from '../base/errors.js';
import type { SnapshotMeta } from '../raft/index.js';
import { isSealedKeyJson, openBlockUnsealer, type BlockUnsealer, type Keyring, type SealedKeyJson } from '../keys/index.js';

const magic = Buffer.from('BATNSNAP', 'latin1');
const formatVersion = 1;
export const snapHeaderBytes = 24;
const blockHeaderBytes = 8;
const endBytes = 16;
const metaBytesMax = snapshotMetaBytesMax;

export function encodeSnapshotHead(
  meta: SnapshotMeta,
  blockBytesMax: number,
  sealed: SealedKeyJson | null = null,
): { bytes: Buffer; crc: number } {
  assert(blockBytesMax >= 1 && blockBytesMax <= 0x7fff_ffff, 'block size fits a u32');
  const { index, term, confState } = meta;
  const json = Buffer.from(JSON.stringify(sealed === null ? { index, term, confState } : { index, term, confState, sealed }));
  const bytes = Buffer.alloc(snapHeaderBytes + json.length);
  magic.copy(bytes, 0);
  bytes.writeUInt32LE(formatVersion, 8);
  bytes.writeUInt32LE(json.length, 12);
  bytes.writeUInt32LE(blockBytesMax, 16);
  json.copy(bytes, snapHeaderBytes);
  const crc = crc32(json, crc32(bytes.subarray(0, 20)));
  bytes.writeUInt32LE(crc, 20);
  return { bytes, crc };
}

/** Frames data blocks and the end record, keeping the CRC chain. */
export class SnapshotBlockEncoder {
  private totalBytes = 0;
  constructor(private crc: number) {}

  /** The 8-byte block header to write just before `data`. */
  blockHeader(data: Uint8Array): Buffer {
    assert(data.length > 0, 'data blocks are not empty');
    const header = Buffer.alloc(blockHeaderBytes);
    header.writeUInt32LE(data.length, 0);
    this.crc = crc32(data, crc32(header.subarray(0, 4), this.crc));
    header.writeUInt32LE(this.crc, 4);
    this.totalBytes += data.length;
    return header;
  }

  end(): Buffer {
    const out = Buffer.alloc(endBytes);
    writeU64(out, 8, this.totalBytes);
    out.writeUInt32LE(crc32(out.subarray(8, 16), crc32(out.subarray(0, 4), this.crc)), 4);
    return out;
  }
}

type State = 'header' | 'meta' | 'blockHeader' | 'blockData' | 'end' | 'done';

/**
 * An incremental reader of snapshot file bytes, fed in chunks of any size. It emits verified
 * metadata and data, and throws CorruptFileError at the offset of the first bad unit.
 * `verifiedOffset` is the end of the last fully checked unit (a resume point).
 */
export class SnapshotParser {
  meta: SnapshotMeta | null = null;
  /** The wrapped data key of an encrypted file (null: plaintext). */
  sealed: SealedKeyJson | null = null;
  verifiedOffset = 0;
  dataBytes = 0;
  /** Bytes handed to onData (the plaintext of an encrypted file). */
  plainBytes = 0;
  private unseal: BlockUnsealer | null = null;
  private blockIndex = 0;
  private sealedBlock: Buffer[] = [];
  private state: State = 'header';
  private offset = 0;
  private carry: Buffer[] = [];
  private carryBytes = 0;
  private crc = 0;
  private metaBytes = 0;
  private blockBytesMax = 0;
  private blockRemaining = 0;
  private blockStart = 0;
  private blockCrcExpected = 0;

  constructor(
    private readonly path: string,
    private readonly onData: ((bytes: Uint8Array) => void) | null = null,
    private readonly keyring: Keyring | null = null,
  ) {}

  get complete(): boolean {
    return this.state === 'done';
  }

  push(input: Uint8Array): void {
    let bytes = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
    while (bytes.length > 0) {
      if (this.state === 'done') this.fail(this.offset, 'data after the end record');
      if (this.state === 'blockData') {
        const used = Math.min(this.blockRemaining, bytes.length);
        this.consumeBlockData(bytes.subarray(0, used));
        bytes = bytes.subarray(used);
        continue;
      }
      const need = this.unitBytes() - this.carryBytes;
      const used = Math.min(need, bytes.length);
      this.carry.push(Buffer.from(bytes.subarray(0, used))); // callers may reuse their buffer
      this.carryBytes += used;
      bytes = bytes.subarray(used);
      if (used === need) this.completeUnit(Buffer.concat(this.carry));
    }
  }

  /** Called at end of file: anything but a complete file is damage. */
  finish(): void {
    if (this.state === 'done') return;
    // A cut inside a block names the block (its length may be the damaged part).
    const inBlock = this.state === 'blockData' || this.state === 'end';
    this.fail(inBlock ? this.blockStart : this.offset, `file ends inside the ${this.state}`);
  }

  private unitBytes(): number {
    if (this.state === 'header') return snapHeaderBytes;
    if (this.state === 'meta') return this.metaBytes;
    if (this.state === 'blockHeader') return blockHeaderBytes;
    return endBytes - blockHeaderBytes;
  }

  private completeUnit(unit: Buffer): void {
    const start = this.offset;
    this.offset += unit.length;
    this.carry = [];
    this.carryBytes = 0;
    if (this.state === 'header') this.readHeader(unit, start);
    else if (this.state === 'meta') this.readMeta(unit, start);
    else if (this.state === 'blockHeader') this.readBlockHeader(unit, start);
    else this.readEnd(unit, start);
  }

  private readHeader(unit: Buffer, start: number): void {
    if (!unit.subarray(0, 8).equals(magic)) this.fail(start, 'not a snapshot file (bad magic)');
    const version = unit.readUInt32LE(8);
    if (version !== formatVersion) this.fail(start, `unsupported snapshot format version ${version}: this build reads version ${formatVersion}; a newer Baton wrote it`);
    this.metaBytes = unit.readUInt32LE(12);
    this.blockBytesMax = unit.readUInt32LE(16);
    if (this.metaBytes < 2 || this.metaBytes > metaBytesMax) this.fail(start, 'bad metadata size');
    if (this.blockBytesMax < 1) this.fail(start, 'bad block size');
    this.crc = crc32(unit.subarray(0, 20));
    this.blockCrcExpected = unit.readUInt32LE(20);
    this.state = 'meta';
  }

  private readMeta(unit: Buffer, start: number): void {
    this.crc = crc32(unit, this.crc);
    if (this.crc !== this.blockCrcExpected) this.fail(0, 'header checksum mismatch');
    let meta: unknown = null;
    try {
      meta = JSON.parse(unit.toString('utf8'));
    } catch {
      this.fail(start, 'metadata is not valid JSON');
    }
    if (!isSnapshotMeta(meta)) this.fail(start, 'metadata has the wrong shape');
    const sealed = (meta as unknown as Record<string, unknown>)['sealed'];
    if (sealed !== undefined && !isSealedKeyJson(sealed)) this.fail(start, 'metadata has a malformed data key');
    this.sealed = sealed ?? null;
    // Only a reader of the data needs the key (a wrong or missing one stops it naming the file).
    if (this.sealed !== null && this.onData !== null) this.unseal = openBlockUnsealer(this.keyring, this.sealed, this.path);
    this.meta = { index: meta.index, term: meta.term, confState: meta.confState };
    this.verifiedOffset = this.offset;
    this.state = 'blockHeader';
  }

  private readBlockHeader(unit: Buffer, start: number): void {
    const length = unit.readUInt32LE(0);
    if (length === 0) {
      this.crc = crc32(unit.subarray(0, 4), this.crc);
      this.blockCrcExpected = unit.readUInt32LE(4);
      this.blockStart = start;
      this.state = 'end';
      return;
    }
    if (length > this.blockBytesMax) this.fail(start, `block of ${length} bytes is too large`);
    this.blockStart = start;
    this.blockRemaining = length;
    this.blockCrcExpected = unit.readUInt32LE(4);
    this.crc = crc32(unit.subarray(0, 4), this.crc);
    this.state = 'blockData';
  }

  private consumeBlockData(data: Buffer): void {
    this.crc = crc32(data, this.crc);
    this.blockRemaining -= data.length;
    this.offset += data.length;
    this.dataBytes += data.length;
    if (this.unseal !== null) this.sealedBlock.push(Buffer.from(data));
    else if (this.onData !== null) {
      this.plainBytes += data.length;
      this.onData(data);
    }
    if (this.blockRemaining > 0) return;
    if (this.crc !== this.blockCrcExpected) this.fail(this.blockStart, 'block checksum mismatch');
    if (this.unseal !== null && this.onData !== null) this.emitUnsealed();
    this.blockIndex++;
    this.verifiedOffset = this.offset;
    this.state = 'blockHeader';
  }

  /** A whole sealed block passed its CRC: authenticate and hand over its plaintext. */
  private emitUnsealed(): void {
    const sealed = Buffer.concat(this.sealedBlock);
    this.sealedBlock = [];
    let plain: Buffer;
    try {
      plain = (this.unseal as BlockUnsealer)(this.blockIndex, sealed);
    } catch {
      this.fail(this.blockStart, `block ${this.blockIndex} does not authenticate (damaged or altered)`);
    }
    this.plainBytes += plain.length;
    (this.onData as (bytes: Uint8Array) => void)(plain);
  }

  private readEnd(unit: Buffer, start: number): void {
    this.crc = crc32(unit, this.crc);
    if (this.crc !== this.blockCrcExpected) {
      this.fail(this.blockStart, 'end record checksum mismatch');
    }
    if (readU64(unit, 0) !== this.dataBytes) this.fail(start, 'end record disagrees on data size');
    this.verifiedOffset = this.offset;
    this.state = 'done';
  }

  private fail(offset: number, reason: string): never {
    throw new CorruptFileError(this.path, offset, reason);
  }
}

function writeU64(target: Buffer, offset: number, value: number): void {
  target.writeUInt32LE(value >>> 0, offset);
  target.writeUInt32LE(Math.floor(value / 0x1_0000_0000), offset + 4);
}

function readU64(source: Buffer, offset: number): number {
  return source.readUInt32LE(offset) + source.readUInt32LE(offset + 4) * 0x1_0000_0000;
}

export function isSnapshotMeta(value: unknown): value is SnapshotMeta {
  if (typeof value !== 'object' || value === null) return false;
  const meta = value as Record<string, unknown>;
  const conf = meta['confState'];
  if (!isCount(meta['index']) || !isCount(meta['term'])) return false;
  if (typeof conf !== 'object' || conf === null) return false;
  return ['voters', 'votersOutgoing', 'learners'].every((key) => {
    const list = (conf as Record<string, unknown>)[key];
    return Array.isArray(list) && list.every(isCount);
  });
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
