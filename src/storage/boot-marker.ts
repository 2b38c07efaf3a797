// The "open since boot X" marker that makes deferred LMDB commits safe. With deferred commits the
// data file is only guaranteed consistent while the OS that holds its dirty pages keeps running:
// a process crash loses nothing (every commit is in the page cache), but an OS crash may leave a
// meta page that points at pages never written. So a marker naming the boot is made durable
// before the first deferred commit and removed only after a final sync: if the next open finds a
// marker from another boot, the file is not trusted and is deleted, and the node rebuilds it
// from what is durable (the snapshot file and the WAL, which is only released below a durable
// snapshot). lmdb-js's own overlappingSync recovery rests on the same boot-id test.
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const markerName = 'open-since-boot';
const bootIdPath = '/proc/sys/kernel/random/boot_id';

/** This OS boot's id, or null where the OS does not expose one (then commits stay synced). */
export function currentBootId(): string | null {
  try {
    const id = readFileSync(bootIdPath, 'utf8').trim();
    return id.length > 0 ? id : null;
  } catch {
    return null;
  }
}

/** The boot the directory's data file was last open in without a final sync, or null. */
export function readBootMarker(directory: string): string | null {
  try {
    return readFileSync(join(directory, markerName), 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** Records `bootId` durably (file and directory entry) before any deferred commit. */
export function writeBootMarker(directory: string, bootId: string): void {
  const path = join(directory, markerName);
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, `${bootId}\n`);
  syncPath(tmp);
  renameSync(tmp, path);
  syncPath(directory);
}

/** Removes the marker durably (after the data file was synced). */
export function clearBootMarker(directory: string): void {
  rmSync(join(directory, markerName), { force: true });
  syncPath(directory);
}

/** fsync of a file or directory by path. */
export function syncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
