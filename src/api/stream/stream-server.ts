// GET /v1/stream: the WebSocket upgrade. Every frame type lives in the registry (key-value and
// watches here; callers add theirs, e.g. lease keepalives), so one connection carries a client's
// whole session. Frames are documented in docs/api/stream.md.
import type { Socket } from 'node:net';
import { principalOfSocket } from '../principal.js';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { InvalidArgumentError, UnavailableError, type BatonError } from '../../base/errors.js';
import { streamFrameFramingBytes } from '../../base/limits.js';
import { attachServerHooks } from '../http/server-hooks.js';
import { rawTarget } from '../http/parse.js';
import { handshakeProblem, refuseUpgrade } from './handshake.js';
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
  /** Verifies `Authorization: Bearer TOKEN` on the upgrade (a user's token); absent: certificates only. */
  readonly tokens?: { verify(token: string): string };
  /** New sessions per second on this node (#28 session storms): a stream open past it is refused 429 with guidance. */
  readonly sessions?: { admit(kind: 'stream_open'): void } | null;
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
      maxPayload: options.apiLimits.requestBytesMax + streamFrameFramingBytes,
      perMessageDeflate: false,
    });
    // With a listener, ws leaves the answer to us (else it writes text/html). handshakeProblem
    // makes the same checks first, so this only answers what a newer ws might add.
    this.wss.on('wsClientError', (error: Error, socket: Duplex) => {
      refuseUpgrade(socket, options.cell, new InvalidArgumentError(`invalid stream handshake: ${error.message}`));
    });
  }

  /**
   * Attach to the node's HTTP server: answers upgrades on /v1/stream, refuses the others, and
   * answers what Node itself would answer bare as JSON too (attachServerHooks; the node attaches
   * the API to its server here only).
   */
  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head));
    attachServerHooks(server, this.options.cell);
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const refuse = (error: BatonError): void => refuseUpgrade(socket, this.options.cell, error);
    let path: string;
    try {
      // The raw path, as the HTTP routes see it (no dot segment is resolved).
      path = rawTarget(req.url ?? '/').path;
    } catch (error) {
      refuse(error as BatonError);
      return;
    }
    if (path !== '/v1/stream') {
      // Node hands every request with an Upgrade header (e.g. h2c) here, not to the routes.
      refuse(new InvalidArgumentError(`no upgrade at ${path.slice(0, 200)}: only GET /v1/stream upgrades (to websocket); send other requests without an Upgrade header`));
      return;
    }
    if (this.options.service.isStopping) {
      refuse(new UnavailableError('the node is stopping'));
      return;
    }
    const problem = handshakeProblem(req);
    if (problem !== null) {
      refuse(problem);
      return;
    }
    try {
      // Before the principal and the upgrade: a refused open costs a header parse and an answer.
      this.options.sessions?.admit('stream_open');
    } catch (error) {
      refuse(error as BatonError);
      return;
    }
    // The connection's principal: a user's token on the upgrade, else its certificate (or anonymous).
    const authorization = req.headers.authorization;
    let principal: string;
    try {
      principal = authorization !== undefined && authorization.startsWith('Bearer ') && this.options.tokens !== undefined
        ? this.options.tokens.verify(authorization.slice('Bearer '.length))
        : principalOfSocket(socket as Socket, this.options.cell.cellId);
    } catch (error) {
      refuse(error as BatonError);
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      new StreamSession(ws, socket, principal, {
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
