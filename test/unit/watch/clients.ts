// Small watch clients for tests: an SSE reader and a stream (WebSocket) client that record what
// arrives and wait, bounded, for a condition over it.
import { get, type IncomingMessage } from 'node:http';
import WebSocket from 'ws';

/** An SSE reader: every `data:` JSON in order; `done` resolves when the stream ends. */
export class SseClient {
  readonly messages: any[] = [];
  response!: IncomingMessage;
  status = 0;
  readonly done: Promise<void>;
  private buffered = '';
  private waiters: (() => void)[] = [];

  constructor(url: string) {
    this.done = new Promise((resolve, reject) => {
      const request = get(url, (res) => {
        this.response = res;
        this.status = res.statusCode ?? 0;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => this.feed(chunk));
        res.on('end', () => resolve());
        res.on('error', reject);
        res.on('close', () => resolve());
        this.wake();
      });
      request.on('error', reject);
    });
  }

  private feed(chunk: string): void {
    // Search only the new text (plus one char): big batches must not cost O(n^2) here.
    let from = Math.max(0, this.buffered.length - 1);
    this.buffered += chunk;
    for (let end = this.buffered.indexOf('\n\n', from); end >= 0; end = this.buffered.indexOf('\n\n', from)) {
      const message = this.buffered.slice(0, end);
      this.buffered = this.buffered.slice(end + 2);
      from = 0;
      if (message.startsWith('data: ')) this.messages.push(JSON.parse(message.slice(6)));
    }
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }

  /** Waits (bounded) until `predicate` holds over what has arrived. */
  async until(predicate: (messages: any[]) => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.messages)) {
      if (Date.now() > deadline) throw new Error(`timed out; got ${JSON.stringify(this.messages).slice(0, 500)}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  close(): void {
    this.response?.destroy();
  }
}

/** A stream client: sends frames, records every answer. */
export class StreamClient {
  readonly frames: any[] = [];
  readonly ws: WebSocket;
  closeCode = 0;
  private constructor(url: string) {
    this.ws = new WebSocket(url);
    this.ws.on('message', (data) => this.frames.push(JSON.parse(String(data))));
    this.ws.on('close', (code) => {
      this.closeCode = code;
    });
  }
  static async open(url: string): Promise<StreamClient> {
    const client = new StreamClient(url);
    await new Promise<void>((resolve, reject) => {
      client.ws.once('open', () => resolve());
      client.ws.once('error', reject);
    });
    return client;
  }
  send(frame: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(frame));
  }
  async until(predicate: (frames: any[]) => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.frames)) {
      if (Date.now() > deadline) throw new Error(`timed out; got ${JSON.stringify(this.frames).slice(0, 800)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
  of(id: unknown): any[] {
    return this.frames.filter((f) => f.id === id);
  }
  close(): void {
    this.ws.terminate();
  }
}
