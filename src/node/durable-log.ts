// The WAL and the snapshot it continues from, opened together: a damaged snapshot falls back to
// an older intact one only when the log still holds every entry after it. When the state
// machine's own store already covers the log's start (it is durable at checkpoints), no snapshot
// file is read at all: the core starts from the start's metadata alone. A snapshot is verified
// here, never held in memory: the caller restores from the file (SnapshotStore.dataOf).
import type { WalKeys } from '../wal/index.js';
import { CorruptFileError } from '../base/errors.js';
import type { Snapshot, SnapshotMeta } from '../raft/index.js';
import { SnapshotStore } from '../snap/index.js';
import type { Keyring } from '../keys/index.js';
import { Wal } from '../wal/index.js';

/**
 * The WAL and the snapshot it continues from: the one its marker names, or, when that file is
 * damaged, the newest older intact one, provided the log still holds every entry after it.
 * Otherwise the node refuses to start, naming the damaged file and offset. When `storeIndex`
 * (the durable state machine's applied index) is at or past the marker, the snapshot is the
 * marker's metadata with no data: the store already holds it.
 */
export async function openDurableLog(dataDir: string, log: { warn(message: string): void }, storeIndex = 0, keys: WalKeys | null = null,
  keyring: Keyring | null = null) {
  const logger = { warn: (m: string) => log.warn(m) };
  const snapshots = new SnapshotStore(dataDir, { logger, keyring });
  await snapshots.init();
  const opened = await Wal.open(dataDir, { logger, keys });
  const start = opened.recovered.snapshotMeta;
  if (start !== null && storeIndex >= start.index) {
    const snapshot: Snapshot = { meta: start, data: new Uint8Array(0) };
    return { ...opened, snapshot, snapshots, snapshotLoaded: false };
  }
  try {
    const snapshot = await loadSnapshotAt(snapshots, opened.recovered.snapshotMeta);
    return { ...opened, snapshot, snapshots, snapshotLoaded: snapshot !== null };
  } catch (error) {
    const marker = opened.recovered.snapshotMeta;
    if (!(error instanceof CorruptFileError) || marker === null) throw error;
    await opened.wal.close();
    for (const older of await snapshots.list()) {
      if (older.index >= marker.index) continue;
      let snapshot: Snapshot;
      try {
        snapshot = { meta: await snapshots.verify(older.path), data: new Uint8Array(0) };
      } catch (olderError) {
        if (olderError instanceof CorruptFileError) continue;
        throw olderError;
      }
      log.warn(`snapshot ${marker.index} is damaged (${error.message}); restoring from older snapshot ${older.index}`);
      const reopened = await Wal.open(dataDir, { logger, keys, restoreIndex: older.index });
      return { ...reopened, snapshot, snapshots, snapshotLoaded: true };
    }
    throw error;
  }
}

/** The snapshot the WAL's marker names (the log continues right after it). */
async function loadSnapshotAt(snapshots: SnapshotStore, meta: SnapshotMeta | null): Promise<Snapshot | null> {
  if (meta === null) return null;
  const info = (await snapshots.list()).find((f) => f.index === meta.index && f.term === meta.term);
  if (info === undefined) {
    throw new CorruptFileError(snapshots.dir, 0, `the WAL needs snapshot ${meta.index}/${meta.term}, which is missing`);
  }
  return { meta: await snapshots.verify(info.path), data: new Uint8Array(0) };
}
