// A growable writer and a bounds-checked reader for the hand-written binary formats (commands,
// records, snapshots). Bad input from outside is an InvalidArgumentError; bad bytes that this
// process stored itself are corruption, an assertion.
import { AssertionError, assert } from '../base/assert.js';
import { InvalidArgumentError } from '../base/errors.js';
import { readU32, readU64, utf8, fromUtf8, writeU32, writeU64 } from './bytes.js';

export class ByteWriter {
  private buffer: Uint8Array;
  private length = 0;

  constructor(capacity = 256) {
    this.buffer = new Uint8Array(capacity);
  }

  private reserve(bytes: number): number {
    const offset = this.length;
    const needed = offset + bytes;
    if (needed > this.buffer.length) {
      const grown = new Uint8Array(Math.max(needed, this.buffer.length * 2));
      grown.set(this.buffer.subarray(0, offset));
      this.buffer = grown;
    }
    this.length = needed;
    return offset;
  }

  // Each method reserves before touching `this.buffer`: reserve may replace it.
  u8(value: number): this {
    const offset = this.reserve(1);
    this.buffer[offset] = value & 0xff;
    return this;
  }

  u16(value: number): this {
    const offset = this.reserve(2);
    this.buffer[offset] = (value >>> 8) & 0xff;
    this.buffer[offset + 1] = value & 0xff;
    return this;
  }

  u32(value: number): this {
    const offset = this.reserve(4);
    writeU32(this.buffer, offset, value);
    return this;
  }

  u64(value: number): this {
    const offset = this.reserve(8);
    writeU64(this.buffer, offset, value);
    return this;
  }

  /**
   * An unsigned LEB128 varint: 7 bits a byte, low bits first, the high bit set on every byte but
   * the last. Up to 2^7 in 1 byte, 2^21 in 3, 2^53 in 8; always the shortest form (so equal
   * numbers are equal bytes).
   */
  varint(value: number): this {
    // The message is built only on failure: record headers write several per applied write.
    if (!(Number.isSafeInteger(value) && value >= 0)) assert(false, `varint out of range: ${value}`);
    let rest = value;
    while (rest >= 0x80) {
      const offset = this.reserve(1);
      this.buffer[offset] = (rest % 0x80) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    const offset = this.reserve(1);
    this.buffer[offset] = rest;
    return this;
  }

  raw(bytes: Uint8Array): this {
    const offset = this.reserve(bytes.length);
    this.buffer.set(bytes, offset);
    return this;
  }

  /** u32 length, then the bytes. */
  bytes(bytes: Uint8Array): this {
    return this.u32(bytes.length).raw(bytes);
  }

  /** u32 length, then UTF-8. */
  string(text: string): this {
    return this.bytes(utf8(text));
  }

  /** Starts over on the same buffer (a scratch writer: see `view`). */
  reset(): this {
    this.length = 0;
    return this;
  }

  /** What was written, as a view of the writer's buffer: valid only until it writes again. */
  view(): Uint8Array {
    return this.buffer.subarray(0, this.length);
  }

  finish(): Uint8Array {
    // A writer sized exactly hands over its buffer without a copy.
    if (this.length === this.buffer.length) return this.buffer;
    return this.buffer.slice(0, this.length);
  }
}

/** 8 x 7 bits hold every integer up to 2^53. */
const varintBytesMax = 8;

export type ByteSource = 'input' | 'stored';

export class ByteReader {
  private offset = 0;

  constructor(
    private readonly data: Uint8Array,
    private readonly source: ByteSource,
    private readonly what: string,
  ) {}

  /** How many bytes were read so far. */
  get position(): number {
    return this.offset;
  }

  fail(reason: string): never {
    const message = `malformed ${this.what} at byte ${this.offset}: ${reason}`;
    if (this.source === 'stored') throw new AssertionError(message);
    throw new InvalidArgumentError(message, { offset: this.offset });
  }

  private take(bytes: number): number {
    if (this.offset + bytes > this.data.length) this.fail('truncated');
    const offset = this.offset;
    this.offset += bytes;
    return offset;
  }

  u8(): number {
    return this.data[this.take(1)] as number;
  }

  u16(): number {
    const offset = this.take(2);
    return ((this.data[offset] as number) << 8) | (this.data[offset + 1] as number);
  }

  u32(): number {
    return readU32(this.data, this.take(4));
  }

  u64(): number {
    const offset = this.take(8);
    if (readU32(this.data, offset) > 0x1f_ffff) this.fail('integer beyond 2^53');
    return readU64(this.data, offset);
  }

  /** A varint as ByteWriter.varint writes it; a longer form than needed is malformed. */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < varintBytesMax; i++) {
      const byte = this.data[this.take(1)] as number;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        if (byte === 0 && i > 0) this.fail('varint not in its shortest form');
        if (!Number.isSafeInteger(value)) this.fail('integer beyond 2^53');
        return value;
      }
      scale *= 0x80;
    }
    return this.fail('varint longer than 8 bytes');
  }

  raw(length: number): Uint8Array {
    const offset = this.take(length);
    return this.data.slice(offset, offset + length);
  }

  /**
   * Like raw, but a view sharing the data's memory, no copy: only for data nobody writes to
   * again (an engine read's own copy, a Raft entry), where a copy per field is pure cost.
   */
  view(length: number): Uint8Array {
    const offset = this.take(length);
    return this.data.subarray(offset, offset + length);
  }

  bytes(): Uint8Array {
    return this.raw(this.u32());
  }

  /** u32 length, then a view of that many bytes (see view). */
  bytesView(): Uint8Array {
    return this.view(this.u32());
  }

  string(): string {
    const bytes = this.bytesView(); // decoded into a new string: no copy needed first
    try {
      return fromUtf8(bytes);
    } catch {
      return this.fail('invalid UTF-8');
    }
  }

  bool(): boolean {
    const value = this.u8();
    if (value > 1) this.fail(`bad boolean ${value}`);
    return value === 1;
  }

  get remaining(): number {
    return this.data.length - this.offset;
  }

  end(): void {
    if (this.remaining !== 0) this.fail(`${this.remaining} trailing bytes`);
  }
}
