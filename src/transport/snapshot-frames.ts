// The snapshot stream's header frame: the snapshot message without its data, plus the data's
// total size so the receiver can refuse or preallocate before any chunk arrives.
import { TransportError, TransportErrorReason } from './errors.js';
import { readSnapshotMeta } from './codec-read.js';
import { snapshotMetaBytes, writeSnapshotMeta } from './codec.js';
import { FrameKind, encodeFrame, expectEnd, type Frame } from './frame.js';
import type { SnapshotMessage, TransportLimits } from './types.js';

export interface SnapshotHeader {
  readonly from: number;
  readonly to: number;
  readonly term: number;
  readonly meta: SnapshotMessage['snapshot']['meta'];
  readonly totalBytes: number;
}

export function encodeSnapshotHeader(header: SnapshotHeader): Buffer {
  return encodeFrame(FrameKind.snapshotHeader, 24 + snapshotMetaBytes(header.meta) + 8, (w) => {
    w.u64(header.from);
    w.u64(header.to);
    w.u64(header.term);
    writeSnapshotMeta(w, header.meta);
    w.u64(header.totalBytes);
  });
}

export function decodeSnapshotHeader(
  frame: Frame,
  limits: Pick<TransportLimits, 'messageItemsMax'>,
): SnapshotHeader {
  expectKind(frame, FrameKind.snapshotHeader);
  const r = frame.body;
  const from = r.u64('from');
  const to = r.u64('to');
  const term = r.u64('term');
  const meta = readSnapshotMeta(r, limits);
  const totalBytes = r.u64('totalBytes');
  expectEnd(r);
  return { from, to, term, meta, totalBytes };
}

export function encodeSnapshotEnd(): Buffer {
  return encodeFrame(FrameKind.snapshotEnd, 0, () => {});
}

export function expectKind(frame: Frame, kind: FrameKind): void {
  if (frame.kind !== kind) {
    throw new TransportError(TransportErrorReason.unexpectedFrame,
      `expected frame kind ${kind}, got ${frame.kind}`);
  }
}
