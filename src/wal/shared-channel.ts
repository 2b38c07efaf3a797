// The WAL's requests to its sync thread through shared memory instead of postMessage (which
// serialized the ops and moved each buffer: 7% of a leader's main thread under 64 put clients).
// The main thread encodes a batch into `data`, stores its id in `request` and wakes the thread,
// which waits in Atomics.wait (it has nothing else to do); it runs the ops, stores an error (if
// any) and the id in `done`, and wakes the main thread's Atomics.waitAsync. One batch at a time.
//
//   data: u32 opCount, then ops: u8 kind, fields (u32 seq, f64 offset/size, u32-length strings
//         and bytes); see encodeOp.
import { assert } from '../base/assert.js';
import type { WalOp } from './types.js';

export const Slot = { request: 0, done: 1, status: 2, errorBytes: 3 } as const;

export const sharedDataBytes = 16 * 1024 * 1024;
const errorBytesMax = 4096;
/** Room kept for an op's fields besides its bytes. */
const opOverheadMax = 64 * 1024;

const Kind = { write: 1, sync: 2, close: 3, open: 4, create: 5, unlink: 6, exit: 7 } as const;

export interface SharedChannel {
  readonly control: Int32Array;
  readonly data: Uint8Array;
  readonly errors: Uint8Array;
}

export function createSharedChannel(): SharedChannel {
  return {
    control: new Int32Array(new SharedArrayBuffer(4 * 4)),
    data: new Uint8Array(new SharedArrayBuffer(sharedDataBytes)),
    errors: new Uint8Array(new SharedArrayBuffer(errorBytesMax)),
  };
}

/**
 * Cuts a batch into requests that fit the data area, in order (a write larger than the area
 * becomes several writes at consecutive offsets: the same bytes land in the same places).
 */
export function splitForChannel(ops: readonly WalOp[], capacity = sharedDataBytes): WalOp[][] {
  const limit = capacity - opOverheadMax;
  const requests: WalOp[][] = [];
  let current: WalOp[] = [];
  let bytes = 4;
  const push = (op: WalOp, size: number): void => {
    if (bytes + size > capacity && current.length > 0) {
      requests.push(current);
      current = [];
      bytes = 4;
    }
    current.push(op);
    bytes += size;
  };
  for (const op of ops) {
    if (op.type === 'write' && op.data.length > limit) {
      for (let at = 0; at < op.data.length; at += limit) {
        const piece = op.data.subarray(at, Math.min(op.data.length, at + limit));
        push({ type: 'write', seq: op.seq, offset: op.offset + at, data: piece }, piece.length + 17);
      }
    } else {
      push(op, opBytes(op));
    }
  }
  if (current.length > 0) requests.push(current);
  return requests;
}

function opBytes(op: WalOp): number {
  switch (op.type) {
    case 'write': return 17 + op.data.length;
    case 'sync': case 'close': return 5;
    case 'open': return 9 + Buffer.byteLength(op.path);
    case 'create':
      return 29 + Buffer.byteLength(op.path) + Buffer.byteLength(op.tmpPath) +
        Buffer.byteLength(op.sparePath ?? '') + op.prefix.length;
    case 'unlink': return 9 + Buffer.byteLength(op.dir) + op.paths.reduce((n, p) => n + 4 + Buffer.byteLength(p), 0);
  }
}

class Writer {
  at = 4;
  private readonly view: DataView;
  constructor(private readonly data: Uint8Array) {
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  }
  u8(value: number): void { this.view.setUint8(this.at, value); this.at += 1; }
  u32(value: number): void { this.view.setUint32(this.at, value); this.at += 4; }
  f64(value: number): void { this.view.setFloat64(this.at, value); this.at += 8; }
  bytes(value: Uint8Array): void { this.u32(value.length); this.data.set(value, this.at); this.at += value.length; }
  text(value: string): void { this.bytes(Buffer.from(value, 'utf8')); }
}

class Reader {
  at = 4;
  private readonly view: DataView;
  constructor(private readonly data: Uint8Array) {
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  }
  u8(): number { const v = this.view.getUint8(this.at); this.at += 1; return v; }
  u32(): number { const v = this.view.getUint32(this.at); this.at += 4; return v; }
  f64(): number { const v = this.view.getFloat64(this.at); this.at += 8; return v; }
  /** A view of the shared area, not a copy: valid until the next request. */
  bytes(): Uint8Array { const n = this.u32(); const v = this.data.subarray(this.at, this.at + n); this.at += n; return v; }
  text(): string { return Buffer.from(this.bytes()).toString('utf8'); }
}

/** Encodes one request (from splitForChannel), or the request that ends the thread (null). */
export function encodeRequest(ops: readonly WalOp[] | null, data: Uint8Array): void {
  const w = new Writer(data);
  if (ops === null) {
    new DataView(data.buffer, data.byteOffset).setUint32(0, 1);
    w.u8(Kind.exit);
    return;
  }
  new DataView(data.buffer, data.byteOffset).setUint32(0, ops.length);
  for (const op of ops) {
    switch (op.type) {
      case 'write': w.u8(Kind.write); w.u32(op.seq); w.f64(op.offset); w.bytes(op.data); break;
      case 'sync': w.u8(Kind.sync); w.u32(op.seq); break;
      case 'close': w.u8(Kind.close); w.u32(op.seq); break;
      case 'open': w.u8(Kind.open); w.u32(op.seq); w.text(op.path); break;
      case 'create':
        w.u8(Kind.create); w.u32(op.seq); w.f64(op.sizeBytes); w.text(op.path); w.text(op.tmpPath);
        w.text(op.sparePath ?? ''); w.bytes(op.prefix);
        break;
      case 'unlink':
        w.u8(Kind.unlink); w.text(op.dir); w.u32(op.paths.length);
        for (const path of op.paths) w.text(path);
        break;
    }
  }
}

/** The ops of the current request, or null for the exit request. */
export function decodeRequest(data: Uint8Array): WalOp[] | null {
  const count = new DataView(data.buffer, data.byteOffset).getUint32(0);
  const r = new Reader(data);
  const ops: WalOp[] = [];
  for (let i = 0; i < count; i++) {
    const kind = r.u8();
    switch (kind) {
      case Kind.write: { const seq = r.u32(); const offset = r.f64(); ops.push({ type: 'write', seq, offset, data: r.bytes() }); break; }
      case Kind.sync: ops.push({ type: 'sync', seq: r.u32() }); break;
      case Kind.close: ops.push({ type: 'close', seq: r.u32() }); break;
      case Kind.open: { const seq = r.u32(); ops.push({ type: 'open', seq, path: r.text() }); break; }
      case Kind.create: {
        const seq = r.u32(); const sizeBytes = r.f64(); const path = r.text(); const tmpPath = r.text();
        const spare = r.text(); const prefix = r.bytes();
        ops.push({ type: 'create', seq, sizeBytes, path, tmpPath, sparePath: spare === '' ? null : spare, prefix });
        break;
      }
      case Kind.unlink: {
        const dir = r.text(); const n = r.u32(); const paths: string[] = [];
        for (let j = 0; j < n; j++) paths.push(r.text());
        ops.push({ type: 'unlink', dir, paths });
        break;
      }
      case Kind.exit: return null;
      default: return assert(false, `WAL request: unknown op kind ${kind}`) as never;
    }
  }
  return ops;
}

/** Records a failure for the main thread (message and errno code, bounded). */
export function encodeError(errors: Uint8Array, message: string, code: string | null): number {
  let text = JSON.stringify({ message, code });
  while (Buffer.byteLength(text) > errors.length) text = JSON.stringify({ message: message.slice(0, message.length >> 1), code });
  const bytes = Buffer.from(text, 'utf8');
  errors.set(bytes, 0);
  return bytes.length;
}

export function decodeError(errors: Uint8Array, length: number): { message: string; code: string | null } {
  return JSON.parse(Buffer.from(errors.subarray(0, length)).toString('utf8')) as { message: string; code: string | null };
}

type WaitAsyncResult = { readonly async: false; readonly value: string } | { readonly async: true; readonly value: Promise<string> };

/** Atomics.waitAsync (in Node 20's V8; the TypeScript lib used here predates it). */
export function waitAsync(array: Int32Array, index: number, value: number, timeoutMs?: number): WaitAsyncResult {
  const atomics = Atomics as unknown as {
    waitAsync(array: Int32Array, index: number, value: number, timeoutMs?: number): WaitAsyncResult;
  };
  return atomics.waitAsync(array, index, value, timeoutMs);
}
