// GET /v1/stream: the WebSocket upgrade. Every frame type lives in the registry (key-value and
// watches here; callers add theirs, e.g. lease keepalives), so one connection carries a client's
// whole session. Frames are documented in docs/api/stream.md.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { CellApi } from '../types.js';
import type { ApiLimits } from '../http/limits.js';
import { FrameRegistry } from './frame-registry.js';
import { registerKvFrames } from './kv-frames.js';
import { StreamSession } from './session.js';
import { defaultStreamLimits, type FrameHandler, type StreamLimits } from './types.js';
import { registerWatchFrames } from './watch-frames.js';
import type { WatchService } from './watch-service.js';

export interface StreamServerOptions {
  readonly cell: CellApi;
  readonly apiLimits: ApiLimits;
  readonly service: WatchService;
  readonly streamLimits?: StreamLimits;
  /** More frame types (e.g. `keepalive`), by type. */
  readonly handlers?: Readonly<Record<string, FrameHandler<StreamSession>>>;
  logError(error: unknown): void;
}

export class StreamServer {
  readonly registry = new FrameRegistry<StreamSession>();
  private readonly wss: WebSocketServer;
  private readonly streamLimits: StreamLimits;

  constructor(private readonly options: StreamServerOptions) {
    this.streamLimits = options.streamLimits ?? defaultStreamLimits;
    registerKvFrames(this.registry);
    registerWatchFrames(this.registry);
    for (const [type, handler] of Object.entries(options.handlers ?? {})) this.registry.register(type, handler);
    this.wss = new WebSocketServer({
      noServer: true,
      // A frame is at most one request (api.md's request limit) plus its JSON framing.
      maxPayload: options.apiLimits.requestBytesMax + 64 * 1024,
      perMessageDeflate: false,
    });
  }

  /** Attach to the node's HTTP server: answers upgrades on /v1/stream, refuses the others. */
  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head));
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== '/v1/stream' || this.options.service.isStopping) {
      socket.end(`HTTP/1.1 ${path === '/v1/stream' ? '503 Service Unavailable' : '404 Not Found'}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      new StreamSession(ws, socket, {
        cell: this.options.cell,
        apiLimits: this.options.apiLimits,
        streamLimits: this.streamLimits,
        service: this.options.service,
        registry: this.registry,
        logError: this.options.logError,
      });
    });
  }

  /** Closes the WebSocket server (sessions are closed by the watch service's stop). */
  close(): void {
    for (const client of this.wss.clients) client.terminate();
    this.wss.close();
  }
}
