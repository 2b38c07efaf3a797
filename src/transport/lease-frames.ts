// Lease keepalives between members, on the Raft connection (frame kind `leases`): a follower
// passes a client's keepalive to the leader as one frame, and the leader answers on its own
// connection to the follower, matched by the caller's call id. This replaces an HTTP request
// per forwarded keepalive (a connection's parser, JSON both ways, a socket write each way) with
// a few bytes per lease in frames that share the flush, and the write, with Raft's messages.
//
//   body: u8 op | u32 callId | op-specific
//     keepalive (1): u32 count | count × u64 leaseId
//     answer    (2): u64 revision | u32 count | count × (u64 leaseId | u8 found | u64 ttlMs)
//     error     (3): text code | text message          (text: u16 length + UTF-8)
import { TransportError, TransportErrorReason } from './errors.js';
import { FrameKind, encodeFrame, expectEnd } from './frame.js';
import type { WireReader } from './wire-reader.js';

export type LeasePeerMessage =
  | { readonly op: 'keepalive'; readonly callId: number; readonly ids: readonly number[] }
  | {
      readonly op: 'answer';
      readonly callId: number;
      readonly revision: number;
      /** ttlMs is null for a lease the leader does not know (lease_not_found). */
      readonly leases: readonly { readonly id: number; readonly ttlMs: number | null }[];
    }
  | { readonly op: 'error'; readonly callId: number; readonly code: string; readonly message: string };

const opCode = { keepalive: 1, answer: 2, error: 3 } as const;
const textBytesMax = 1024;

function clip(text: string): string {
  // Error texts are for logs and users; a bounded, whole-character prefix is enough.
  let out = text.length > textBytesMax / 4 ? text.slice(0, textBytesMax / 4) : text;
  while (Buffer.byteLength(out) > textBytesMax) out = out.slice(0, -1);
  return out;
}

/** One `leases` frame (header included), ready to queue on a peer's connection. */
export function encodeLeaseFrame(message: LeasePeerMessage): Buffer {
  switch (message.op) {
    case 'keepalive': {
      const bytes = 1 + 4 + 4 + 8 * message.ids.length;
      return encodeFrame(FrameKind.leases, bytes, (w) => {
        w.u8(opCode.keepalive);
        w.u32(message.callId);
        w.u32(message.ids.length);
        for (const id of message.ids) w.u64(id);
      });
    }
    case 'answer': {
      const bytes = 1 + 4 + 8 + 4 + 17 * message.leases.length;
      return encodeFrame(FrameKind.leases, bytes, (w) => {
        w.u8(opCode.answer);
        w.u32(message.callId);
        w.u64(message.revision);
        w.u32(message.leases.length);
        for (const lease of message.leases) {
          w.u64(lease.id);
          w.bool(lease.ttlMs !== null);
          w.u64(lease.ttlMs ?? 0);
        }
      });
    }
    case 'error': {
      const code = clip(message.code);
      const text = clip(message.message);
      const codeBytes = Buffer.byteLength(code);
      const textBytes = Buffer.byteLength(text);
      return encodeFrame(FrameKind.leases, 1 + 4 + 2 + codeBytes + 2 + textBytes, (w) => {
        w.u8(opCode.error);
        w.u32(message.callId);
        w.text(code, codeBytes);
        w.text(text, textBytes);
      });
    }
  }
}

/** Decodes a `leases` frame's body whole; malformed bytes are a TransportError. */
export function readLeaseFrameBody(body: WireReader, itemsMax: number): LeasePeerMessage {
  const op = body.u8('lease op');
  const callId = body.u32('call id');
  let message: LeasePeerMessage;
  if (op === opCode.keepalive) {
    const count = body.count(itemsMax, 8, 'lease ids');
    const ids = new Array<number>(count);
    for (let i = 0; i < count; i++) ids[i] = body.u64('lease id');
    message = { op: 'keepalive', callId, ids };
  } else if (op === opCode.answer) {
    const revision = body.u64('revision');
    const count = body.count(itemsMax, 17, 'lease answers');
    const leases = new Array<{ id: number; ttlMs: number | null }>(count);
    for (let i = 0; i < count; i++) {
      const id = body.u64('lease id');
      const found = body.bool('found');
      const ttlMs = body.u64('ttl');
      leases[i] = { id, ttlMs: found ? ttlMs : null };
    }
    message = { op: 'answer', callId, revision, leases };
  } else if (op === opCode.error) {
    message = { op: 'error', callId, code: body.text('error code'), message: body.text('error message') };
  } else {
    throw new TransportError(TransportErrorReason.invalidValue, `lease op ${op}`, body.offset - 5);
  }
  expectEnd(body);
  return message;
}
