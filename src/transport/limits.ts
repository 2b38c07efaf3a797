// Default bounds of the peer transport, each with its reason, and how they must relate.
import { assert } from '../base/assert.js';
import * as limits from '../base/limits.js';
import type { TransportLimits } from './types.js';

const mebibyte = 1024 * 1024;

export const defaultTransportLimits: TransportLimits = {
  // Raft's appendBytesMax is 1 MiB of entry data per message; 16 MiB leaves room for headers and
  // for a peer configured with bigger appends, yet caps what garbage can make us allocate.
  frameBytesMax: limits.frameBytesMax,
  // Big enough to amortize the per-frame CRC and header, small enough to interleave peers.
  frameBytesTarget: 256 * 1024,
  frameMessagesMax: 64 * 1024,
  messageItemsMax: 64 * 1024,
  // Raft tolerates loss, not unbounded memory. Worst case per peer: a full queue, plus one
  // flushed queue on top of socketBufferedBytesMax in the socket (about 72 MiB by default).
  queueMessagesMax: 8192,
  queueBytesMax: 32 * mebibyte,
  socketBufferedBytesMax: 8 * mebibyte,
  // A stopped or half-open peer never drains; without this the connection would sit full for
  // TCP's retransmission timeout (many minutes) holding socketBufferedBytesMax of stale data.
  writeStallTimeoutMs: 5000,
  snapshotChunkBytes: limits.snapshotChunkBytes,
  snapshotInMemoryBytesMax: 256 * mebibyte,
  reconnectDelayMsBase: 50,
  reconnectDelayMsMax: 2000,
  handshakeTimeoutMs: 5000,
  snapshotIdleTimeoutMs: 30_000,
};

export function resolveTransportLimits(overrides: Partial<TransportLimits> = {}): TransportLimits {
  const limits: TransportLimits = { ...defaultTransportLimits, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    assert(Number.isSafeInteger(value) && value > 0, `transport limit ${name} must be > 0`);
  }
  assert(limits.frameBytesTarget <= limits.frameBytesMax, 'frames are packed below the maximum');
  // A snapshot chunk plus its frame header must fit in one frame.
  assert(limits.snapshotChunkBytes + 64 <= limits.frameBytesMax, 'snapshot chunks fit a frame');
  assert(limits.reconnectDelayMsBase <= limits.reconnectDelayMsMax, 'backoff base <= max');
  assert(limits.frameMessagesMax <= 0xffff_ffff && limits.messageItemsMax <= 0xffff_ffff);
  return limits;
}
