// `baton snapshot restore`: one member's data directory of a NEW cell, made from a backup
// (docs/design/restore.md). The store is the backup's carried into the next fencing epoch
// (mvcc/restore-epoch.ts); the identity is a new cluster id, derived from the backup's hash, the
// new epoch and a nonce that every member's restore of one cell shares. The directory is built
// beside DIR and renamed into place last, so a crashed restore leaves no half cell a node could start.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConfigError } from '../base/config-error.js';
import { writeRestoredIdentity, type RestoreRecord } from '../membership/member-identity.js';
import { CorruptFileError } from '../base/errors.js';
import { MvccStore } from '../mvcc/index.js';
import { checkBackupStream, namingFile, openBackupFile, type BackupFile } from '../snap/index.js';
import { openRecordKeys, RecordSealer, SealedEngine, type Keyring } from '../keys/index.js';
import { dataFileName, LmdbEngine } from '../storage/index.js';
import { syncDir } from '../snap/file-io.js';

export interface RestoreMember {
  readonly name: string;
  /** Its place in --initial-cluster (1, 2, ...): its id in the new cell derives from it. */
  readonly place: number;
  readonly dataDir: string;
}

export interface RestorePlan {
  readonly cellId: string;
  /** Shared by every member's restore of one cell; generated (and printed) when not given. */
  readonly nonce: string;
  /** One election timeout of the new cell: added to every lease's remaining TTL. */
  readonly leaseGraceMs: number;
  readonly oldClusterId: string | null;
  /**
   * With a keyring (the restore was given --encryption-key-file/-command), the member's store is
   * written sealed (records.key, as a node with a key creates it), so no plaintext reaches its disk.
   */
  readonly keyring?: Keyring | null;
}

export interface RestoredMember {
  readonly name: string;
  /** Its id in the new cell (membership/member-identity.ts restoredMemberId), not the old one's. */
  readonly memberId: number;
  readonly dataDir: string;
  readonly clusterId: string;
  readonly restoredFrom: RestoreRecord;
  readonly keys: number;
  readonly leases: number;
  /** Whether the store's records are sealed (a keyring was given). */
  readonly sealed: boolean;
}

/** A fresh nonce: 16 random bytes, hex. */
export function newRestoreNonce(): string {
  return randomBytes(16).toString('hex');
}

/** The restored cell's cluster id: the same for every member restored with one file and nonce. */
export function restoredClusterId(fileSha256: string, epoch: number, nonce: string, oldClusterId: string | null): string {
  const identity = ['baton-restore', oldClusterId ?? '', fileSha256, String(epoch), nonce].join('|');
  return createHash('sha256').update(identity).digest('hex').slice(0, 16);
}

/**
 * Opens FILE: its hash, format and (encrypted) key are checked now; its stream is checked as each
 * member's restore reads it (damage names the file and offset, and leaves no member directory).
 */
export function checkBackup(file: string, keyring: Keyring | null = null): BackupFile {
  return openBackupFile(resolve(file), keyring, { checkStream: false });
}

/** Writes one member's data directory; refuses a DIR that exists and is not empty. */
export async function restoreMember(backup: BackupFile, member: RestoreMember, plan: RestorePlan): Promise<RestoredMember> {
  const dataDir = resolve(member.dataDir);
  if (existsSync(dataDir) && readdirSync(dataDir).length > 0) {
    throw new ConfigError(`--data-dir ${dataDir} exists and is not empty: a restore writes a new member's directory`);
  }
  const building = `${dataDir}.restoring-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  const dbDirectory = join(building, 'db');
  const keyring = plan.keyring ?? null;
  // The data key (and its first open number) is on disk before LMDB creates state.mdb.
  if (keyring !== null) mkdirSync(dbDirectory, { recursive: true });
  const recordKeys = keyring === null ? null : openRecordKeys(dbDirectory, keyring, { create: true, write: true });
  const lmdb = LmdbEngine.open({ directory: dbDirectory, commits: 'synced' });
  const engine = recordKeys === null ? lmdb : new SealedEngine(lmdb, new RecordSealer(recordKeys, join(dbDirectory, dataFileName)));
  let metas;
  let keys = 0;
  let leases = 0;
  try {
    const store = new MvccStore(engine);
    metas = store.restoreNextEpoch(backup.chunks(), { leaseGraceMs: plan.leaseGraceMs });
    keys = metas.keys;
    leases = store.leaseCount();
  } catch (error) {
    await lmdb.close();
    rmSync(building, { recursive: true, force: true });
    // Damage may surface as another error first (a record read before the stream's checksum at
    // its end): a stream that does not check is the cause to report, naming the file and offset.
    if (!(error instanceof CorruptFileError)) checkBackupStream(backup);
    throw namingFile(backup.path, error);
  }
  await lmdb.close();
  const { old, restored } = metas;
  const clusterId = restoredClusterId(backup.sha256, restored.epoch, plan.nonce, plan.oldClusterId);
  const restoredFrom: RestoreRecord = {
    fileSha256: backup.sha256,
    oldClusterId: plan.oldClusterId,
    oldRevision: old.revision,
    oldEpoch: old.epoch,
    epoch: restored.epoch,
    time: new Date().toISOString(),
  };
  const memberId = writeRestoredIdentity(building, { clusterId, cellId: plan.cellId, place: member.place, name: member.name, restoredFrom });
  await syncDir(building);
  if (existsSync(dataDir)) rmSync(dataDir, { recursive: true }); // empty (checked above)
  renameSync(building, dataDir);
  await syncDir(dirname(dataDir));
  return { name: member.name, memberId, dataDir, clusterId, restoredFrom, keys, leases, sealed: recordKeys !== null };
}
