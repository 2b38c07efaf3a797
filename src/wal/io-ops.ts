// Performing planned ops with synchronous fs calls. Runs on the sync worker thread (or inline in
// tests). Synchronous on purpose: writeSync + fdatasyncSync is the fastest path measured on this
// machine, and the worker keeps it off the event loop.
import * as fs from 'node:fs';
import { promises as fsp } from 'node:fs';
import { assert } from '../base/assert.js';
import type { WalOp } from './types.js';

/** The file calls ops need; tests wrap it to simulate a crash part-way through a write. */
export interface FileIo {
  open(path: string, flags: string): number;
  write(fd: number, data: Uint8Array, position: number): void;
  datasync(fd: number): void;
  close(fd: number): void;
  rename(from: string, to: string): void;
  unlink(path: string): void;
  syncDir(dir: string): void;
}

export const realFileIo: FileIo = {
  open: (path, flags) => fs.openSync(path, flags),
  write: (fd, data, position) => {
    let done = 0;
    while (done < data.length) {
      done += fs.writeSync(fd, data, done, data.length - done, position + done);
    }
  },
  datasync: (fd) => {
    fs.fdatasyncSync(fd);
    if (faultControlFile !== null) stallLikeASlowDisk();
  },
  close: (fd) => fs.closeSync(fd),
  rename: (from, to) => fs.renameSync(from, to),
  unlink: (path) => {
    try {
      fs.unlinkSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  },
  syncDir: (dir) => syncDirectory(dir),
};

// ---- fault injection (test/faults only) ------------------------------------------------------
// A slow disk for the fault suite: each WAL fdatasync then waits `fsyncDelayMs` from the control
// file (JSON, rewritten by the test at run time). Honoured only when BATON_FAULT_INJECTION=1 and
// BATON_FAULT_CONTROL are both set, so a stray variable alone cannot slow a production node; the
// node logs it loudly (src/node/testing/fault-hooks.ts). Read once here: the sync worker thread gets a
// copy of the node's environment.

export interface FaultControl {
  /** Added to every WAL fdatasync. */
  readonly fsyncDelayMs: number;
  /** Added to the node's wall clock (Date.now): an NTP step, forwards or back. */
  readonly clockOffsetMs: number;
}

const noFaults: FaultControl = { fsyncDelayMs: 0, clockOffsetMs: 0 };
const faultValueMaxMs = 24 * 3600 * 1000;

/** The control file, or null when fault injection is off (the normal case). */
export function faultControlPath(env: NodeJS.ProcessEnv): string | null {
  const path = env['BATON_FAULT_CONTROL'];
  return env['BATON_FAULT_INJECTION'] === '1' && path !== undefined && path !== '' ? path : null;
}

/** The control file's values; a missing or unreadable file means no faults. */
export function readFaultControl(path: string): FaultControl {
  try {
    const raw = JSON.parse(fs.readFileSync(path, 'utf8')) as Partial<Record<keyof FaultControl, unknown>>;
    const pick = (value: unknown, min: number): number =>
      typeof value === 'number' && Number.isFinite(value) ? Math.max(min, Math.min(faultValueMaxMs, value)) : 0;
    return { fsyncDelayMs: pick(raw.fsyncDelayMs, 0), clockOffsetMs: pick(raw.clockOffsetMs, -faultValueMaxMs) };
  } catch {
    return noFaults;
  }
}

const faultControlFile = faultControlPath(process.env);
const faultRereadMs = 100;
let faultReadAtMs = -Infinity;
let faultDelayMs = 0;
const stallCell = new Int32Array(new SharedArrayBuffer(4));

function stallLikeASlowDisk(): void {
  const now = performance.now();
  if (now - faultReadAtMs >= faultRereadMs) {
    faultReadAtMs = now;
    faultDelayMs = readFaultControl(faultControlFile as string).fsyncDelayMs;
  }
  // Blocks this thread as a slow fdatasync would (the sync worker, off the event loop).
  if (faultDelayMs > 0) Atomics.wait(stallCell, 0, 0, faultDelayMs);
}

/** A directory's fsync makes a created, renamed or removed name durable. */
export function syncDirectory(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

const zeroChunkBytes = 1024 * 1024;

/**
 * Zero-fills and syncs the next segment ahead of time on libuv's thread pool, in parallel with
 * the sync worker's appends, so a rollover costs one small write instead of 64 MiB of zeros.
 */
export async function prepareSpareFile(path: string, sizeBytes: number): Promise<void> {
  const handle = await fsp.open(path, 'w');
  try {
    const zeros = new Uint8Array(Math.min(zeroChunkBytes, sizeBytes));
    for (let at = 0; at < sizeBytes; at += zeros.length) {
      await handle.write(zeros, 0, Math.min(zeros.length, sizeBytes - at), at);
    }
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/** Open segment descriptors by segment seq; owned by whoever runs the ops. */
export type OpenSegments = Map<number, number>;

export function executeOps(ops: readonly WalOp[], open: OpenSegments, io: FileIo): void {
  for (const op of ops) {
    switch (op.type) {
      case 'create':
        open.set(op.seq, createSegmentFile(op, io));
        break;
      case 'open':
        assert(!open.has(op.seq), 'segment opened once');
        open.set(op.seq, io.open(op.path, 'r+'));
        break;
      case 'write':
        io.write(descriptor(open, op.seq), op.data, op.offset);
        break;
      case 'sync':
        io.datasync(descriptor(open, op.seq));
        break;
      case 'close':
        io.close(descriptor(open, op.seq));
        open.delete(op.seq);
        break;
      case 'unlink':
        // Oldest first, each made durable before the next: a crash mid-release must leave a
        // contiguous run of segments, never a hole that recovery would take for damage.
        for (const path of op.paths) {
          io.unlink(path);
          io.syncDir(op.dir);
        }
        break;
    }
  }
}

function descriptor(open: OpenSegments, seq: number): number {
  const fd = open.get(seq);
  if (fd === undefined) return assert(false, `segment ${seq} is open`) as never;
  return fd;
}

/**
 * Writes the whole segment (zeros, so later fdatasyncs need no block allocation, and so recovery
 * can tell never-written space from damage), syncs it, then renames it into place: a segment
 * name never points at a file without its header.
 */
function createSegmentFile(op: Extract<WalOp, { type: 'create' }>, io: FileIo): number {
  assert(op.prefix.length <= op.sizeBytes, 'the prefix fits the segment');
  if (op.sparePath !== null) {
    // Already zero-filled and synced: only the prefix is new. Same order: data, sync, rename.
    const fd = io.open(op.sparePath, 'r+');
    io.write(fd, op.prefix, 0);
    io.datasync(fd);
    io.rename(op.sparePath, op.path);
    io.syncDir(dirOf(op.path));
    return fd;
  }
  const fd = io.open(op.tmpPath, 'w+');
  const zeros = new Uint8Array(Math.min(zeroChunkBytes, op.sizeBytes));
  for (let at = 0; at < op.sizeBytes; at += zeros.length) {
    io.write(fd, zeros.subarray(0, Math.min(zeros.length, op.sizeBytes - at)), at);
  }
  io.write(fd, op.prefix, 0);
  io.datasync(fd);
  io.rename(op.tmpPath, op.path);
  io.syncDir(dirOf(op.path));
  return fd;
}

function dirOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash <= 0 ? '/' : path.slice(0, slash);
}
