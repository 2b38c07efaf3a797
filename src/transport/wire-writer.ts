// Writes little-endian integers and byte strings into a buffer sized in advance by the caller
// (the codec measures first, then writes), so encoding a flush is one allocation and no growth.
import { assert } from '../base/assert.js';

const twoPow32 = 0x1_0000_0000;

export class WireWriter {
  // Invariant: 0 <= offset <= buffer.length; every write stays inside the measured size.
  offset: number;

  constructor(
    readonly buffer: Buffer,
    offset = 0,
  ) {
    this.offset = offset;
  }

  u8(value: number): void {
    assert(value >= 0 && value <= 0xff && Number.isInteger(value), 'u8 out of range');
    this.buffer[this.offset++] = value;
  }

  u16(value: number): void {
    assert(value >= 0 && value <= 0xffff && Number.isInteger(value), 'u16 out of range');
    const b = this.buffer;
    b[this.offset++] = value & 0xff;
    b[this.offset++] = value >>> 8;
  }

  u32(value: number): void {
    assert(value >= 0 && value <= 0xffff_ffff && Number.isInteger(value), 'u32 out of range');
    const b = this.buffer;
    let o = this.offset;
    b[o++] = value & 0xff;
    b[o++] = (value >>> 8) & 0xff;
    b[o++] = (value >>> 16) & 0xff;
    b[o++] = value >>> 24;
    this.offset = o;
  }

  /** A non-negative safe integer as 8 bytes (terms, indexes and member ids may pass 2^32). */
  u64(value: number): void {
    assert(Number.isSafeInteger(value) && value >= 0, 'u64 must be a non-negative safe integer');
    // Written inline (the hot path of every message header); a Uint8Array store keeps the low
    // 8 bits, and the high word of a safe integer is below 2^21, so its top byte is zero.
    const low = value >>> 0;
    const high = (value - low) / twoPow32;
    const b = this.buffer;
    let o = this.offset;
    b[o++] = low;
    b[o++] = low >>> 8;
    b[o++] = low >>> 16;
    b[o++] = low >>> 24;
    b[o++] = high;
    b[o++] = high >>> 8;
    b[o++] = high >>> 16;
    b[o++] = 0;
    this.offset = o;
  }

  bool(value: boolean): void {
    this.buffer[this.offset++] = value ? 1 : 0;
  }

  bytes(data: Uint8Array): void {
    this.buffer.set(data, this.offset);
    this.offset += data.length;
  }

  /** UTF-8 with a u16 length prefix; `encodedBytes` is Buffer.byteLength(text) from measuring. */
  text(text: string, encodedBytes: number): void {
    this.u16(encodedBytes);
    const written = this.buffer.write(text, this.offset, 'utf8');
    assert(written === encodedBytes, 'text length was measured');
    this.offset += written;
  }
}
