// The checkpoint file beside state.mdb: the meta page of the last tree known to be wholly on
// disk. Two fixed slots, written alternately with a sequence number and a CRC and synced, so a
// torn or interrupted write leaves the other slot intact; reading takes the valid slot with the
// higher sequence number. A slot that fails its CRC while the other is valid is what an
// interrupted write leaves; both invalid (the file exists) is damage and stops the node.
import { closeSync, constants, fdatasync, fsyncSync, openSync, readFileSync, write, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import { crc32 } from '../base/crc32.js';
import { CorruptFileError } from '../base/errors.js';
import { metaRecordBytes, parseMetaRecord, type MetaPage } from './lmdb-meta.js';

export const checkpointFileName = 'checkpoint';
const slotBytes = 512;
const recordMagic = 0x42434b31; // "BCK1"
// magic u32, sequence u64, meta length u32, meta bytes, CRC-32 of all before it
const headerBytes = 4 + 8 + 4;
const recordBytes = headerBytes + metaRecordBytes + 4;

export interface CheckpointRecord {
  /** Increases by one per checkpoint written to this file. */
  readonly sequence: bigint;
  /** The tree that is durable: LMDB's meta page for it. */
  readonly meta: MetaPage;
}

/** The newest intact record in the file at `path`, or null when there is no file (or it is empty). */
export function readCheckpoint(path: string): CheckpointRecord | null {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  if (bytes.length === 0) return null;
  let newest: CheckpointRecord | null = null;
  for (const slot of [0, 1]) {
    const record = decodeSlot(bytes, slot * slotBytes, path);
    if (record !== null && (newest === null || record.sequence > newest.sequence)) newest = record;
  }
  if (newest === null) throw new CorruptFileError(path, 0, 'neither checkpoint slot holds an intact record');
  return newest;
}

/** Writes `record` into its slot and syncs the file (the open path, before any commit). */
export function writeCheckpointSync(path: string, record: CheckpointRecord): void {
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644);
  try {
    const bytes = encode(record);
    writeSync(fd, bytes, 0, bytes.length, slotOf(record) * slotBytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Writes `record` into its slot of the file open at `fd` and waits for the sync (off the event loop). */
export async function writeCheckpoint(fd: number, record: CheckpointRecord): Promise<void> {
  const bytes = encode(record);
  await writeAt(fd, bytes, 0, bytes.length, slotOf(record) * slotBytes);
  await datasync(fd);
}

const writeAt = promisify(write);
const datasync = promisify(fdatasync);

function slotOf(record: CheckpointRecord): number {
  return Number(record.sequence & 1n);
}

function encode(record: CheckpointRecord): Buffer {
  const bytes = Buffer.alloc(recordBytes);
  bytes.writeUInt32LE(recordMagic, 0);
  bytes.writeBigUInt64LE(record.sequence, 4);
  bytes.writeUInt32LE(record.meta.bytes.length, 12);
  bytes.set(record.meta.bytes, headerBytes);
  bytes.writeUInt32LE(crc32(bytes.subarray(0, recordBytes - 4)), recordBytes - 4);
  return bytes;
}

function decodeSlot(file: Buffer, offset: number, path: string): CheckpointRecord | null {
  if (file.length < offset + recordBytes) return null;
  const bytes = file.subarray(offset, offset + recordBytes);
  if (bytes.readUInt32LE(0) !== recordMagic) return null;
  if (bytes.readUInt32LE(recordBytes - 4) !== crc32(bytes.subarray(0, recordBytes - 4))) return null;
  const length = bytes.readUInt32LE(12);
  if (length !== metaRecordBytes) throw new CorruptFileError(path, offset + 12, `a checkpoint meta of ${length} bytes`);
  const meta = parseMetaRecord(bytes.subarray(headerBytes, headerBytes + length), path, offset + headerBytes);
  return { sequence: bytes.readBigUInt64LE(4), meta };
}
