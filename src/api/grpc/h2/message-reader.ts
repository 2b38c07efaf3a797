// Length-prefixed gRPC messages (a flag byte, a u32 length, the bytes) out of a stream's DATA
// payloads. A message that arrives whole in one payload is a view of it (no copy); pieces are
// held, counted against the connection's bound on request bytes, until the message is whole,
// then joined once. Compressed messages are refused: the facade advertises no grpc-encoding.
import { status } from '@grpc/grpc-js';

export interface MessageSink {
  /** One whole message; false: stop (the call ended). */
  takeMessage(bytes: Buffer): boolean;
}

export interface BufferedInput {
  /** Request bytes held (negative: released). */
  buffered(bytes: number): void;
}

export class MessageReader {
  private parts: Buffer[] = [];
  private partsBytes = 0;
  /** Bytes (prefix included) of the message the held pieces begin; 0 while its prefix is short. */
  private needed = 0;

  constructor(
    private readonly bytesMax: number,
    private readonly encoding: string,
    private readonly input: BufferedInput,
  ) {}

  get partial(): boolean {
    return this.partsBytes > 0;
  }

  /** Hands the messages `data` completes to `sink`; a status when the stream must be refused. */
  push(data: Buffer, sink: MessageSink): { code: number; details: string } | null {
    let input = data;
    if (this.partsBytes > 0) {
      this.hold(data);
      if (this.needed === 0 && this.partsBytes >= 5) {
        const length = this.prefix(Buffer.concat(this.parts, this.partsBytes), 0);
        if (typeof length !== 'number') return length;
        this.needed = 5 + length;
      }
      if (this.needed === 0 || this.partsBytes < this.needed) return null;
      input = Buffer.concat(this.parts, this.partsBytes);
      this.release();
    }
    let at = 0;
    while (input.length - at >= 5) {
      const length = this.prefix(input, at);
      if (typeof length !== 'number') return length;
      if (input.length - at - 5 < length) {
        this.needed = 5 + length;
        break;
      }
      const message = input.subarray(at + 5, at + 5 + length);
      at += 5 + length;
      if (!sink.takeMessage(message)) return null;
    }
    if (at < input.length) this.hold(input.subarray(at));
    return null;
  }

  /** Gives back the held bytes (the message completed, or the call ended). */
  release(): void {
    if (this.partsBytes > 0) this.input.buffered(-this.partsBytes);
    this.parts = [];
    this.partsBytes = 0;
    this.needed = 0;
  }

  private hold(piece: Buffer): void {
    this.parts.push(piece);
    this.partsBytes += piece.length;
    this.input.buffered(piece.length);
  }

  /** The message length in the prefix at `at`, or the status refusing it. */
  private prefix(input: Buffer, at: number): number | { code: number; details: string } {
    const length = input.readUInt32BE(at + 1);
    if (input[at] !== 0) {
      if (this.encoding === '' || this.encoding === 'identity') {
        return { code: status.INTERNAL, details: 'a compressed message without a grpc-encoding' };
      }
      const details = `message compression is not supported (grpc-encoding: ${this.encoding.slice(0, 40)})`;
      return { code: status.UNIMPLEMENTED, details };
    }
    if (length > this.bytesMax) {
      const details = `Received message larger than max (${length} vs. ${this.bytesMax})`;
      return { code: status.RESOURCE_EXHAUSTED, details };
    }
    return length;
  }
}
