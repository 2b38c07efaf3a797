// Maintenance.Snapshot: the node's whole state machine in Baton's MVCC snapshot format (the same
// bytes as GET /v1/maintenance/snapshot), then padding to a multiple of 512 bytes whose last two
// bytes give its length, then the SHA-256 of everything before it: etcd's layout (etcdctl checks
// size % 512 == 32 and the hash), so `etcdctl snapshot save` keeps a self-checking file. It
// restores into Baton (`snapshotBody` strips the framing, then `MvccStore.restore`), not into
// etcd: it is no bbolt database.
import { createHash } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { InvalidArgumentError } from '../../base/errors.js';
import { toGrpcError } from './errors.js';
import type { HeaderSource } from './header.js';

export interface SnapshotSource {
  /** Opens a consistent read view; chunks stream from it (closing the iterator closes the view). */
  open(): { revision: number; chunks: Iterable<Uint8Array> };
}

interface SnapshotCall {
  write(message: unknown): boolean;
  end(): void;
  emit(event: 'error', error: unknown): boolean;
  on(event: 'cancelled' | 'close', listener: () => void): unknown;
  once(event: 'drain', listener: () => void): unknown;
}

/** Each download holds a read view open (LMDB cannot reuse old pages meanwhile). */
const concurrentSnapshotsMax = 2;
let running = 0;

export async function serveSnapshot(call: SnapshotCall, source: SnapshotSource, headers: HeaderSource, logError: (error: unknown) => void): Promise<void> {
  if (running >= concurrentSnapshotsMax) {
    const details = `etcdserver: too many requests (${running} snapshot downloads already running on this node)`;
    call.emit('error', { code: status.RESOURCE_EXHAUSTED, details, message: details });
    return;
  }
  running++;
  let cancelled = false;
  call.on('cancelled', () => (cancelled = true));
  let iterator: Iterator<Uint8Array> | null = null;
  try {
    const { revision, chunks } = source.open();
    iterator = chunks[Symbol.iterator]();
    const header = headers.header(revision);
    const hash = createHash('sha256');
    let bytes = 0;
    for (let next = iterator.next(); next.done !== true; next = iterator.next()) {
      if (cancelled) return;
      hash.update(next.value);
      bytes += next.value.length;
      // remaining_bytes is unknown ahead (the view is streamed): 1 while more may follow.
      const more = call.write({ header, remaining_bytes: '1', blob: Buffer.from(next.value) });
      if (!more) await new Promise<void>((resolve) => call.once('drain', resolve));
    }
    const padding = snapshotPadding(bytes);
    hash.update(padding);
    call.write({ header, remaining_bytes: '32', blob: padding });
    call.write({ header, remaining_bytes: '0', blob: hash.digest() });
    call.end();
  } catch (error) {
    if (!cancelled) call.emit('error', toGrpcError(error, logError));
  } finally {
    iterator?.return?.();
    running--;
  }
}

const blockBytes = 512;

/** 2..513 bytes that bring `length` to a multiple of 512; the last two say how many (big-endian). */
export function snapshotPadding(length: number): Buffer {
  let size = blockBytes - (length % blockBytes);
  if (size < 2) size += blockBytes;
  const padding = Buffer.alloc(size);
  padding.writeUInt16BE(size, size - 2);
  return padding;
}

/** The Baton snapshot inside a file written by `etcdctl snapshot save` (checks the SHA-256). */
export function snapshotBody(file: Uint8Array): Buffer {
  const bytes = Buffer.from(file.buffer, file.byteOffset, file.byteLength);
  if (bytes.length < blockBytes + 32 || bytes.length % blockBytes !== 32) throw new InvalidArgumentError('not a snapshot file: wrong size');
  const content = bytes.subarray(0, bytes.length - 32);
  if (!createHash('sha256').update(content).digest().equals(bytes.subarray(bytes.length - 32))) {
    throw new InvalidArgumentError('snapshot file damaged: SHA-256 mismatch');
  }
  const padding = content.readUInt16BE(content.length - 2);
  if (padding < 2 || padding > blockBytes + 1 || padding > content.length) throw new InvalidArgumentError('not a snapshot file: bad padding');
  return content.subarray(0, content.length - padding);
}
