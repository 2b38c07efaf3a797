// `baton snapshot status FILE`: what a snapshot file holds, like `etcdctl snapshot status` (which
// reads only etcd's bbolt files and says "invalid database" for Baton's). It reads both a file of
// `baton snapshot save` and one of `etcdctl snapshot save` against Baton's etcd facade (the same
// stream framed as etcd frames it: padding to 512-byte blocks, whose last two bytes give its
// length, then the SHA-256 of all before; src/api/grpc/snapshot-stream.ts writes it). The stream
// is checked (entry count, checksum) and restored into memory; `hash` is the key space's content
// hash at the snapshot's revision, the number `etcdctl endpoint hashkv --rev=REVISION` answers.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { CorruptFileError } from '../base/errors.js';
import { MemoryEngine, MvccStore, hashKeySpace } from '../mvcc/index.js';

export interface SnapshotStatus {
  readonly file: string;
  /** 'baton' (baton snapshot save) or 'etcdctl' (etcdctl snapshot save, etcd's framing). */
  readonly framing: 'baton' | 'etcdctl';
  readonly hash: number;
  readonly revision: number;
  readonly compactRevision: number;
  readonly totalKeys: number;
  readonly totalSize: number;
  readonly appliedIndex: number;
  readonly appliedTerm: number;
  readonly sha256: string;
}

const blockBytes = 512;
const sha256Bytes = 32;
/** "BTSN": a Baton snapshot stream's first bytes (src/mvcc/snapshot-stream.ts). */
const batonMagic = Buffer.from('BTSN', 'latin1');

export function snapshotStatus(file: string): SnapshotStatus {
  const bytes = readFileSync(file);
  if (!bytes.subarray(0, batonMagic.length).equals(batonMagic)) {
    throw new CorruptFileError(file, 0, 'not a Baton snapshot (an etcd bbolt snapshot is read by `etcdctl snapshot status`)');
  }
  const { body, framing } = unframe(file, bytes);
  const store = new MvccStore(new MemoryEngine());
  try {
    store.restore([body]);
  } catch (error) {
    // The stream's own check names no file: this one is.
    if (error instanceof CorruptFileError) throw new CorruptFileError(file, error.offset, error.reason);
    throw error;
  }
  const keys = store.range({ type: 'get', key: '/', rangeEnd: Uint8Array.of(0x30), countOnly: true });
  return {
    file,
    framing,
    hash: hashKeySpace(store).hash,
    revision: store.revision,
    compactRevision: store.compactRevision,
    totalKeys: keys.count,
    totalSize: bytes.length,
    appliedIndex: store.appliedIndex,
    appliedTerm: store.appliedTerm,
    sha256: createHash('sha256').update(bytes).digest('hex'),
  };
}

/** The stream inside etcd's framing when the file has it (size and SHA-256 agree), else the file. */
function unframe(file: string, bytes: Buffer): { body: Buffer; framing: 'baton' | 'etcdctl' } {
  if (bytes.length < blockBytes + sha256Bytes || bytes.length % blockBytes !== sha256Bytes) return { body: bytes, framing: 'baton' };
  const content = bytes.subarray(0, bytes.length - sha256Bytes);
  if (!createHash('sha256').update(content).digest().equals(bytes.subarray(content.length))) {
    // A Baton stream may happen to have this size: decoding it decides.
    return { body: bytes, framing: 'baton' };
  }
  const padding = content.readUInt16BE(content.length - 2);
  if (padding < 2 || padding > blockBytes + 1 || padding > content.length) throw new CorruptFileError(file, content.length - 2, 'bad padding');
  return { body: content.subarray(0, content.length - padding), framing: 'etcdctl' };
}
