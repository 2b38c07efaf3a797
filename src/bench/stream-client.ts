// A /v1/stream (WebSocket) client for the capacity benches: requests answered by id, watch frames
// handed to callbacks, and a socket that can stop reading (a slow consumer, as a stalled client
// would be). The library's client (src/client) retries and resumes; a bench must see raw answers.
import WebSocket from 'ws';

/** One /v1/stream connection: requests answered by id, watch events handed to `onEvents`. */
export class StreamClient {
  private readonly pending = new Map<number, { resolve: (frame: any) => void; reject: (error: Error) => void }>();
  private nextId = 1;
  onEvents: (watchId: string, frame: any, arrivedMs: number) => void = () => {};
  /** A created watch ended by the node (slow_consumer, compacted, ...): its error body. */
  onWatchEnd: (watchId: string, error: any) => void = () => {};
  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const arrivedMs = performance.now();
      const frame = JSON.parse(String(data));
      if (typeof frame.id === 'string') {
        if (frame.type === 'events') this.onEvents(frame.id, frame, arrivedMs);
        const waiter = this.watchWaiters.get(frame.id);
        if (waiter === undefined && frame.type === 'error') this.onWatchEnd(frame.id, frame.error);
        if (waiter !== undefined && (frame.type === 'created' || frame.type === 'error')) {
          this.watchWaiters.delete(frame.id);
          if (frame.type === 'created') waiter.resolve(frame);
          else waiter.reject(new Error(JSON.stringify(frame.error)));
        }
        return;
      }
      const waiter = this.pending.get(frame.id);
      if (waiter === undefined) return;
      this.pending.delete(frame.id);
      if (frame.type === 'error') waiter.reject(new Error(JSON.stringify(frame.error)));
      else waiter.resolve(frame.result);
    });
    ws.on('close', () => {
      for (const waiter of this.pending.values()) waiter.reject(new Error('stream closed'));
      this.pending.clear();
    });
  }
  private readonly watchWaiters = new Map<string, { resolve: (frame: any) => void; reject: (error: Error) => void }>();
  static async open(base: string): Promise<StreamClient> {
    const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/stream`, { perMessageDeflate: false });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    return new StreamClient(ws);
  }
  call(frame: Record<string, unknown>): Promise<any> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, ...frame }));
    });
  }
  watch(id: string, frame: Record<string, unknown>): Promise<any> {
    return new Promise((resolve, reject) => {
      this.watchWaiters.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, type: 'watch', ...frame }));
    });
  }
  /** Stops reading the socket: the node's writes back up in TCP, as with a stalled consumer. */
  pauseReading(): void {
    this.ws.pause();
  }
  resumeReading(): void {
    this.ws.resume();
  }
  close(): void {
    this.ws.terminate();
  }
}

/** Runs `task` for items 0..count-1 with `parallel` in flight. */
export async function pool(count: number, parallel: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(parallel, count) }, async () => {
    while (next < count) await task(next++);
  }));
}

