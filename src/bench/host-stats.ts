// What a member costs the machine, read from the file system and /proc (Linux): the blocks its
// data directory takes on disk, a file's apparent size, and a process's resident memory.
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Bytes of disk blocks under `path` (like `du -s --block-size=1`); 0 when it is gone. */
export function diskBytes(path: string): number {
  let stat;
  try {
    stat = lstatSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.blocks * 512;
  let bytes = stat.blocks * 512;
  let entries: string[] = [];
  try {
    entries = readdirSync(path);
  } catch {
    return bytes;
  }
  for (const entry of entries) bytes += diskBytes(join(path, entry));
  return bytes;
}

/** A file's length (apparent size), 0 when absent. */
export function fileBytes(path: string): number {
  try {
    return lstatSync(path).size;
  } catch {
    return 0;
  }
}

export interface MemoryFigures {
  /** Resident set: anonymous memory plus file pages mapped in (LMDB and bbolt map their store). */
  readonly rssBytes: number;
  readonly rssAnonBytes: number;
  readonly rssFileBytes: number;
}

/** Resident memory of these processes, summed (VmRSS, RssAnon, RssFile of /proc/PID/status). */
export function memoryOf(pids: readonly number[]): MemoryFigures {
  let rss = 0;
  let anon = 0;
  let file = 0;
  for (const pid of pids) {
    let text = '';
    try {
      text = readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      continue; // gone
    }
    rss += statusKiB(text, 'VmRSS');
    anon += statusKiB(text, 'RssAnon');
    file += statusKiB(text, 'RssFile') + statusKiB(text, 'RssShmem');
  }
  return { rssBytes: rss * 1024, rssAnonBytes: anon * 1024, rssFileBytes: file * 1024 };
}

function statusKiB(text: string, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return match === null ? 0 : Number(match[1]);
}

export function mib(bytes: number): string {
  return (bytes / (1024 * 1024)).toFixed(0);
}
