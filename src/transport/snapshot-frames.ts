// The snapshot stream's control frames. The header is the snapshot message without its data,
// plus the data's total size and checksum: together with the meta's index and term they name the
// exact bytes, so the receiver can answer with the offset it already holds of them (resume).
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
  /** Identifies the data's bytes (a Baton snapshot file: the CRC of its end record). */
  readonly checksum: number;
}

export function encodeSnapshotHeader(header: SnapshotHeader): Buffer {
  const bodyBytes = 24 + snapshotMetaBytes(header.meta) + 8 + 4;
  return encodeFrame(FrameKind.snapshotHeader, bodyBytes, (w) => {
    w.u64(header.from);
    w.u64(header.to);
    w.u64(header.term);
    writeSnapshotMeta(w, header.meta);
    w.u64(header.totalBytes);
    w.u32(header.checksum);
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
  const checksum = r.u32('checksum');
  expectEnd(r);
  return { from, to, term, meta, totalBytes, checksum };
}

/** The receiver's answer to a header: send the data from `offset` (what it already holds). */
export function encodeSnapshotResume(offset: number): Buffer {
  return encodeFrame(FrameKind.snapshotResume, 8, (w) => w.u64(offset));
}

/** Decodes a snapshotResume, checking the offset against the announced size. */
export function decodeSnapshotResume(frame: Frame, totalBytes: number): number {
  expectKind(frame, FrameKind.snapshotResume);
  const offset = frame.body.u64('resume offset');
  expectEnd(frame.body);
  if (offset > totalBytes) {
    throw new TransportError(TransportErrorReason.invalidValue,
      `resume at ${offset} of a ${totalBytes}-byte snapshot`);
  }
  return offset;
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
