// Reading the WAL directory at startup: scan every segment, replay, and cut a torn tail. This is
// the only place that repairs anything, and it repairs only the one thing a crash can leave
// behind: a partial last write in the last segment. Everything else throws CorruptFileError.
import { promises as fsp } from 'node:fs';
import { dirname, join } from 'node:path';
import { CorruptFileError } from '../base/errors.js';
import type { SegmentCursor } from './plan.js';
import { replaySegments } from './replay.js';
import type { ReplayResult } from './replay.js';
import { scanSegment } from './scan.js';
import type { ScannedSegment } from './scan.js';
import { parseSegmentFileName, spareFileName, tmpSuffix } from './segment-name.js';
import type { WalLogger } from './types.js';
import type { WalKeys } from './seal.js';

export interface RecoveryOutcome {
  readonly replay: ReplayResult;
  /** Segments on disk, oldest first (seq, firstIndex, path). */
  readonly segments: readonly { seq: number; firstIndex: number; path: string }[];
  /** Where appends continue; null when the directory holds no segment yet. */
  readonly tail: SegmentCursor | null;
  readonly truncated: { readonly path: string; readonly offset: number } | null;
}

export async function recoverWalDir(
  walDir: string,
  options: { segmentBytes: number; logger: WalLogger; restoreIndex: number | null; keys?: WalKeys | null },
): Promise<RecoveryOutcome> {
  const created = await fsp.mkdir(walDir, { recursive: true });
  // A new directory's own name must be durable too, or a crash could lose the whole WAL.
  // mkdir returns the first directory it made: sync the parent of each new one.
  for (let dir = walDir; created !== undefined && dir !== dirname(created); dir = dirname(dir)) {
    await syncDirectoryAsync(dirname(dir));
  }
  const names = await fsp.readdir(walDir);
  const files: { seq: number; firstIndex: number; path: string }[] = [];
  for (const name of names) {
    const parsed = parseSegmentFileName(name);
    if (parsed !== null) files.push({ ...parsed, path: join(walDir, name) });
    else if (name === spareFileName) await fsp.unlink(join(walDir, name)); // unused, no data
    else if (name.endsWith(tmpSuffix)) {
      // A segment whose creation never reached its rename: it holds no acknowledged record.
      options.logger.warn(`wal: removing unfinished segment ${join(walDir, name)}`);
      await fsp.unlink(join(walDir, name));
    } else options.logger.warn(`wal: ignoring unexpected file ${join(walDir, name)}`);
  }
  files.sort((a, b) => a.seq - b.seq);
  const scanned: ScannedSegment[] = [];
  for (const [k, file] of files.entries()) {
    const bytes = await fsp.readFile(file.path);
    const segment = scanSegment(bytes, file.path, k === files.length - 1, options.keys ?? null);
    if (segment.header.seq !== file.seq || segment.header.firstIndex !== file.firstIndex) {
      throw new CorruptFileError(file.path, 0, 'segment header disagrees with the file name');
    }
    scanned.push(segment);
  }
  const replay = replaySegments(scanned, options.restoreIndex);
  const last = scanned[scanned.length - 1];
  if (last === undefined) return { replay, segments: files, tail: null, truncated: null };
  const sizeBytes = await prepareTail(last, options);
  const tail: SegmentCursor = {
    seq: last.header.seq,
    path: last.path,
    firstIndex: last.header.firstIndex,
    offset: last.endOffset,
    sizeBytes,
    crc: last.lastCrc,
    writeBytesMax: last.header.writeBytesMax,
    key: last.key,
    sealsWrites: last.header.sealsWrites === true,
  };
  const truncated = last.torn === null ? null : { path: last.path, offset: last.endOffset };
  return { replay, segments: files, tail, truncated };
}

async function syncDirectoryAsync(dir: string): Promise<void> {
  const handle = await fsp.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Zeroes everything after the last valid record (a torn write, or nothing) and restores the
 * preallocated size, so the next crash's window starts clean. Returns the segment's size.
 */
async function prepareTail(
  last: ScannedSegment,
  options: { segmentBytes: number; logger: WalLogger },
): Promise<number> {
  const handle = await fsp.open(last.path, 'r+');
  try {
    const { size } = await handle.stat();
    const sizeBytes = Math.max(size, options.segmentBytes);
    if (last.torn !== null) {
      const discarded = last.torn.lastNonZero + 1 - last.endOffset;
      options.logger.warn(
        `wal: truncated torn tail of ${last.path} at byte offset ${last.endOffset} ` +
          `(${last.torn.reason}; ${discarded} bytes discarded)`,
      );
      await handle.truncate(last.endOffset);
    }
    if (last.torn !== null || size < sizeBytes) {
      await handle.truncate(sizeBytes);
      await handle.sync(); // fsync, not fdatasync: the truncation is a metadata change
    }
    return sizeBytes;
  } finally {
    await handle.close();
  }
}
