// LMDB's two meta pages, read and written by the checkpoint code (checkpoint.ts). A meta page
// names the root of one committed tree: LMDB opens whichever of pages 0 and 1 has the higher
// transaction id. The layout below is the one of the LMDB inside lmdb-js 3.x (a 24-byte page
// header, then MDB_meta: magic, version, address, mapsize, the free and main database records,
// last page, txnid, boot id); `readMetaPage` checks the magic and version on every read, and
// test/unit/storage/lmdb-meta.test.ts checks the offsets against commits, so a changed layout
// stops a node with a clear error instead of restoring the wrong bytes.
import { closeSync, fsyncSync, openSync, readSync, writeSync } from 'node:fs';
import { CorruptFileError } from '../base/errors.js';

const pageHeaderBytes = 24;
const magic = 0xbeefc0de;
const dataVersion = 2; // MDB_DATA_VERSION of the LMDB in lmdb-js 3.x
const magicAt = pageHeaderBytes;
const versionAt = pageHeaderBytes + 4;
const pageSizeAt = pageHeaderBytes + 24;
const lastPageAt = pageHeaderBytes + 120;
const txnIdAt = pageHeaderBytes + 128;
/** The meta record's end (its boot id field included): what a restore copies. */
export const metaRecordBytes = pageHeaderBytes + 144;

export interface MetaPage {
  /** The transaction that committed the tree this page names. */
  readonly txnId: bigint;
  /** The tree's last page number: every page it uses is at or below it. */
  readonly lastPage: bigint;
  readonly pageSize: number;
  /** The page's first metaRecordBytes bytes, as on disk. */
  readonly bytes: Uint8Array;
}

/** Both meta pages of the file open at `fd` (null for one that is not a valid meta page). */
export function readMetaPages(fd: number, path: string): [MetaPage | null, MetaPage | null] {
  const first = readMetaAt(fd, 0);
  if (first === null) throw new CorruptFileError(path, 0, 'no LMDB meta page at the start of the file');
  return [first, readMetaAt(fd, first.pageSize)];
}

/** The meta page LMDB would open: the valid one with the higher transaction id. */
export function latestMeta(fd: number, path: string): MetaPage {
  const [a, b] = readMetaPages(fd, path);
  if (a === null) throw new CorruptFileError(path, 0, 'no LMDB meta page at the start of the file');
  return b !== null && b.txnId > a.txnId ? b : a;
}

/**
 * Writes `meta` into both meta slots of the file at `path` and syncs it, so the next open uses
 * the tree `meta` names. Only for a file no process has open.
 */
export function restoreMetaPages(path: string, meta: MetaPage): void {
  const fd = openSync(path, 'r+');
  try {
    for (const slot of [0, 1]) {
      const page = Buffer.from(meta.bytes);
      page.writeBigUInt64LE(BigInt(slot), 0); // the page number in the header
      writeSync(fd, page, 0, page.length, slot * meta.pageSize);
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** `meta` with another transaction id (nonce-advance.ts moves an encrypted store's ids forward). */
export function withTxnId(meta: MetaPage, txnId: bigint): MetaPage {
  const bytes = Buffer.from(meta.bytes);
  bytes.writeBigUInt64LE(txnId, txnIdAt);
  return { ...meta, txnId, bytes: new Uint8Array(bytes) };
}

/** Parses a meta page record held in `bytes` (from a checkpoint record). */
export function parseMetaRecord(bytes: Uint8Array, path: string, offset: number): MetaPage {
  const page = decode(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  if (page === null) throw new CorruptFileError(path, offset, 'the checkpoint holds no valid LMDB meta page');
  return page;
}

function readMetaAt(fd: number, position: number): MetaPage | null {
  const buffer = Buffer.alloc(metaRecordBytes);
  const read = readSync(fd, buffer, 0, buffer.length, position);
  if (read < buffer.length) return null;
  return decode(buffer);
}

function decode(buffer: Buffer): MetaPage | null {
  if (buffer.length < metaRecordBytes) return null;
  if (buffer.readUInt32LE(magicAt) !== magic) return null;
  if ((buffer.readUInt32LE(versionAt) & 0xffff) !== dataVersion) return null;
  return {
    txnId: buffer.readBigUInt64LE(txnIdAt),
    lastPage: buffer.readBigUInt64LE(lastPageAt),
    pageSize: buffer.readUInt32LE(pageSizeAt),
    bytes: new Uint8Array(buffer.subarray(0, metaRecordBytes)),
  };
}
