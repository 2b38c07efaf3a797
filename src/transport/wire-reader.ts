// Reads what WireWriter wrote, checking every length against the bytes that remain: a truncated
// or garbled frame becomes a TransportError at a byte offset, never an out-of-range read.
import { TransportError, TransportErrorReason } from './errors.js';

const twoPow32 = 0x1_0000_0000;
// The high word of a safe integer is at most 2^21 - 1.
const safeHighMax = 0x1f_ffff;

export class WireReader {
  // Invariant: start <= offset <= end <= buffer.length.
  offset: number;

  constructor(
    readonly buffer: Buffer,
    offset: number,
    readonly end: number,
  ) {
    this.offset = offset;
  }

  remaining(): number {
    return this.end - this.offset;
  }

  private need(bytes: number, what: string): void {
    if (this.end - this.offset < bytes) {
      throw new TransportError(TransportErrorReason.truncated, `${what} needs ${bytes} bytes`,
        this.offset);
    }
  }

  u8(what = 'u8'): number {
    this.need(1, what);
    return this.buffer[this.offset++] as number;
  }

  u16(what = 'u16'): number {
    this.need(2, what);
    const b = this.buffer;
    const o = this.offset;
    this.offset = o + 2;
    return (b[o] as number) | ((b[o + 1] as number) << 8);
  }

  u32(what = 'u32'): number {
    this.need(4, what);
    const b = this.buffer;
    const o = this.offset;
    this.offset = o + 4;
    return (
      ((b[o] as number) | ((b[o + 1] as number) << 8) | ((b[o + 2] as number) << 16)) +
      (b[o + 3] as number) * 0x100_0000
    );
  }

  u64(what = 'u64'): number {
    this.need(8, what);
    const b = this.buffer;
    const o = this.offset;
    const low = ((b[o] as number) | ((b[o + 1] as number) << 8) | ((b[o + 2] as number) << 16)) +
      (b[o + 3] as number) * 0x100_0000;
    const high = ((b[o + 4] as number) | ((b[o + 5] as number) << 8) |
      ((b[o + 6] as number) << 16)) + (b[o + 7] as number) * 0x100_0000;
    if (high > safeHighMax) {
      throw new TransportError(TransportErrorReason.invalidValue, `${what} is not a safe integer`,
        o);
    }
    this.offset = o + 8;
    return high * twoPow32 + low;
  }

  bool(what = 'bool'): boolean {
    const start = this.offset;
    const value = this.u8(what);
    if (value > 1) {
      throw new TransportError(TransportErrorReason.invalidValue, `${what} is ${value}`, start);
    }
    return value === 1;
  }

  /** A count checked against `max` and against the bytes left (each item >= itemBytesMin). */
  count(max: number, itemBytesMin: number, what: string): number {
    const start = this.offset;
    const value = this.u32(what);
    if (value > max) {
      throw new TransportError(TransportErrorReason.tooLarge, `${what} ${value} > ${max}`, start);
    }
    if (value * itemBytesMin > this.remaining()) {
      throw new TransportError(TransportErrorReason.truncated, `${what} ${value} exceeds frame`,
        start);
    }
    return value;
  }

  /**
   * A plain Uint8Array view into the frame, not a copy: it keeps the frame's memory alive while
   * referenced, which is bounded by frameBytesMax and shared by the frame's other entries.
   */
  bytes(length: number, what = 'bytes'): Uint8Array {
    this.need(length, what);
    const start = this.offset;
    this.offset += length;
    return new Uint8Array(this.buffer.buffer, this.buffer.byteOffset + start, length);
  }

  text(what = 'text'): string {
    const length = this.u16(what);
    this.need(length, what);
    const start = this.offset;
    this.offset += length;
    return this.buffer.toString('utf8', start, this.offset);
  }
}
