// `baton snapshot status FILE`: what a snapshot file holds, like `etcdctl snapshot status` (which
// reads only etcd's bbolt files and says "invalid database" for Baton's). It reads both a file of
// `baton snapshot save` and one of `etcdctl snapshot save` against Baton's etcd facade (the same
// stream framed as etcd frames it: padding to 512-byte blocks, whose last two bytes give its
// length, then the SHA-256 of all before; src/api/grpc/snapshot-stream.ts writes it). The stream
// is checked (entry count, checksum) and restored into memory; `hash` is the key space's content
// hash at the snapshot's revision, the number `etcdctl endpoint hashkv --rev=REVISION` answers.
import { MemoryEngine, MvccStore, hashKeySpace } from '../mvcc/index.js';
import { openBackupFile } from '../snap/index.js';
import type { Keyring } from '../keys/index.js';

export interface SnapshotStatus {
  readonly file: string;
  /** 'baton' (baton snapshot save) or 'etcdctl' (etcdctl snapshot save, etcd's framing). */
  readonly framing: 'baton' | 'etcdctl';
  readonly hash: number;
  readonly revision: number;
  readonly compactRevision: number;
  /** The fencing epoch the backup's revisions live in (0 unless its cell came from a restore). */
  readonly epoch: number;
  readonly totalKeys: number;
  /** Leases in the snapshot (each kept, with a grace, by a restore). */
  readonly leases: number;
  readonly totalSize: number;
  readonly appliedIndex: number;
  readonly appliedTerm: number;
  readonly sha256: string;
  /** The key-encryption key id of an encrypted file, else null. */
  readonly kekId: string | null;
}

export function snapshotStatus(file: string, keyring: Keyring | null = null): SnapshotStatus {
  const backup = openBackupFile(file, keyring);
  const store = new MvccStore(new MemoryEngine());
  store.restore(backup.chunks());
  const keys = store.range({ type: 'get', key: '/', rangeEnd: Uint8Array.of(0x30), countOnly: true });
  return {
    file,
    framing: backup.framing,
    hash: hashKeySpace(store).hash,
    revision: store.revision,
    compactRevision: store.compactRevision,
    epoch: store.epoch,
    totalKeys: keys.count,
    leases: store.leaseCount(),
    totalSize: backup.sizeBytes,
    appliedIndex: store.appliedIndex,
    appliedTerm: store.appliedTerm,
    sha256: backup.sha256,
    kekId: backup.kekId,
  };
}
