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
  datasync: (fd) => fs.fdatasyncSync(fd),
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
  assert(fd !== undefined, `segment ${seq} is open`);
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
