// A scripted /v1/stream server on 127.0.0.1 for client unit tests: it records every frame the
// client sends (per connection) and lets the test answer, push or drop the connection. No cell.
import { WebSocketServer, type WebSocket } from 'ws';
import { BatonClient } from '../../../src/client/index.js';

export interface Received {
  readonly frame: Record<string, unknown>;
  readonly socket: WebSocket;
  /** Index of the connection it came on (0 = first). */
  readonly connection: number;
}

export type FrameHandler = (received: Received, server: FakeStreamServer) => void;

export class FakeStreamServer {
  readonly received: Received[] = [];
  connections = 0;
  private constructor(
    private readonly wss: WebSocketServer,
    readonly url: string,
    private readonly handler: FrameHandler,
  ) {
    wss.on('connection', (socket) => {
      const connection = this.connections++;
      socket.on('message', (data) => {
        const received = { frame: JSON.parse(String(data)) as Record<string, unknown>, socket, connection };
        this.received.push(received);
        this.handler(received, this);
      });
    });
  }

  static async start(handler: FrameHandler): Promise<FakeStreamServer> {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/v1/stream' });
    await new Promise<void>((resolve) => wss.once('listening', resolve));
    const { port } = wss.address() as { port: number };
    return new FakeStreamServer(wss, `http://127.0.0.1:${port}`, handler);
  }

  /** The frames of one type, in arrival order. */
  frames(type: string): Record<string, unknown>[] {
    return this.received.filter((r) => r.frame['type'] === type).map((r) => r.frame);
  }

  client(): BatonClient {
    return new BatonClient({ endpoints: [this.url], discover: false, random: () => 0, retry: { delayMsBase: 1, delayMsMax: 1 } });
  }

  async close(): Promise<void> {
    for (const socket of this.wss.clients) socket.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}

export function result(received: Received, body: unknown): void {
  received.socket.send(JSON.stringify({ id: received.frame['id'], type: 'result', result: body }));
}

export function error(received: Received, body: Record<string, unknown>): void {
  received.socket.send(JSON.stringify({ id: received.frame['id'], type: 'error', error: body }));
}
