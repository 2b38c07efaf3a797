// Promise-style reads over a socket for the short request/response exchanges (the snapshot
// sender's handshake reply and final ack): frames queue here until awaited, and a closed or
// failed socket rejects every pending and later wait with a TransportError.
import type { Socket } from 'node:net';
import { TransportError, TransportErrorReason } from './errors.js';
import { FrameReader, type Frame } from './frame.js';

export class FrameInbox {
  private frames: Frame[] = [];
  private failure: Error | null = null;
  private waiters: { resolve: () => void; reject: (error: Error) => void }[] = [];

  constructor(
    private readonly socket: Socket,
    frameBytesMax: number,
  ) {
    const reader = new FrameReader(frameBytesMax);
    socket.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
        for (let frame = reader.next(); frame !== null; frame = reader.next()) {
          this.frames.push(frame);
        }
      } catch (error) {
        this.fail(error as Error);
        socket.destroy();
        return;
      }
      this.wakeAll();
    });
    socket.on('drain', () => this.wakeAll());
    socket.on('connect', () => this.wakeAll());
    socket.on('error', (error) => this.fail(error));
    socket.on('close', () => {
      this.fail(new TransportError(TransportErrorReason.disconnected, 'connection closed'));
    });
  }

  /** The next frame from the peer. */
  async next(): Promise<Frame> {
    for (;;) {
      const frame = this.frames.shift();
      if (frame !== undefined) return frame;
      await this.wait();
    }
  }

  /** True when a frame has arrived and is waiting to be read. */
  hasFrame(): boolean {
    return this.frames.length > 0;
  }

  /** Resolves once the socket has connected. */
  async connected(): Promise<void> {
    while (this.socket.connecting) await this.wait();
    this.throwIfFailed();
  }

  /** Resolves once the socket's write buffer has drained (back-pressure). */
  async drained(): Promise<void> {
    while (this.socket.writableNeedDrain) await this.wait();
    this.throwIfFailed();
  }

  private wait(): Promise<void> {
    this.throwIfFailed();
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  private throwIfFailed(): void {
    if (this.failure !== null) throw this.failure;
  }

  private fail(error: Error): void {
    if (this.failure === null) {
      this.failure = error instanceof TransportError
        ? error
        : new TransportError(TransportErrorReason.disconnected, error.message);
    }
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter.reject(this.failure);
  }

  private wakeAll(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter.resolve();
  }
}
