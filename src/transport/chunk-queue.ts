// An async iterable fed by a socket: chunks wait here until the consumer pulls them, and the
// socket is paused while too many wait, so a slow disk on the receiver slows the sender (TCP
// back-pressure) instead of buffering a whole snapshot in memory.
import { assert } from '../base/assert.js';

export class ChunkQueue implements AsyncIterable<Uint8Array> {
  private chunks: Uint8Array[] = [];
  private bufferedBytes = 0;
  private ended = false;
  private failure: Error | null = null;
  private waiter: (() => void) | null = null;
  private iterated = false;

  /**
   * @param pause called when more than `bufferedBytesMax` wait for the consumer
   * @param resume called when the consumer has taken them
   */
  constructor(
    private readonly bufferedBytesMax: number,
    private readonly pause: () => void,
    private readonly resume: () => void,
  ) {}

  push(chunk: Uint8Array): void {
    assert(!this.ended, 'no chunk after the end');
    if (this.failure !== null) return; // the consumer is gone: nothing will read it
    this.chunks.push(chunk);
    this.bufferedBytes += chunk.length;
    if (this.bufferedBytes > this.bufferedBytesMax) this.pause();
    this.wake();
  }

  end(): void {
    this.ended = true;
    this.wake();
  }

  fail(error: Error): void {
    if (this.ended) return;
    this.failure = error;
    this.chunks = [];
    this.bufferedBytes = 0;
    this.wake();
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    assert(!this.iterated, 'a snapshot stream is read once');
    this.iterated = true;
    for (;;) {
      if (this.failure !== null) throw this.failure;
      const chunk = this.chunks.shift();
      if (chunk !== undefined) {
        const wasOver = this.bufferedBytes > this.bufferedBytesMax;
        this.bufferedBytes -= chunk.length;
        if (wasOver && this.bufferedBytes <= this.bufferedBytesMax) this.resume();
        yield chunk;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }
}
