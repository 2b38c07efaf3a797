// One WebSocket on /v1/stream: reads JSON frames, runs each through the frame registry, answers
// with the frame's id, and pumps watch output at the socket's pace (fair across the session's
// watches, paused while the socket holds more than the high-water mark).
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { Socket } from 'node:net';
import { BatonError, InvalidArgumentError, OverloadedError, UnavailableError } from '../../base/errors.js';
import type { WatchConnection, WatchOutput } from '../../watch/index.js';
import type { CellApi } from '../types.js';
import type { ApiLimits } from '../http/limits.js';
import { batchJson } from './event-json.js';
import { parseFrame, salvageId, type FrameRegistry } from './frame-registry.js';
import type { Frame, FrameContext, StreamLimits, WatchTag } from './types.js';
import { watchEndError } from './watch-request.js';
import { forgetWatch, type StreamWatch, type WatchSession } from './watch-frames.js';
import type { WatchService } from './watch-service.js';
import { withSource } from '../request-source.js';

export interface SessionOptions {
  readonly cell: CellApi;
  readonly apiLimits: ApiLimits;
  readonly streamLimits: StreamLimits;
  readonly service: WatchService;
  readonly registry: FrameRegistry<StreamSession>;
  logError(error: unknown): void;
}

/** How long a client refused by ws may take to answer its close frame before the socket ends. */
const streamCloseGraceMs = 2_000;

export class StreamSession implements WatchSession {
  readonly service: WatchService;
  readonly connection: WatchConnection<WatchTag>;
  readonly watches = new Map<string, StreamWatch>();
  private readonly context: FrameContext;
  private inFlight = 0;
  private flushScheduled = false;
  private closed = false;
  private readonly closedSignal = new AbortController();
  private readonly unregister: () => void;
  /** One callback for every send (no closure per frame): resumes a pump paused by backpressure. */
  private readonly written = (): void => this.onWritten();

  constructor(
    private readonly ws: WebSocket,
    /** The upgraded socket under `ws`: corked while a flush writes many frames (one writev). */
    private readonly socket: Duplex,
    /** Who is connected (the upgrade's token user, or the certificate's CN, or '' anonymous). */
    principal: string,
    private readonly options: SessionOptions,
  ) {
    this.service = options.service;
    this.connection = options.service.hub.openConnection(() => this.schedule(), options.service.admitter(principal));
    this.context = { cell: options.cell, apiLimits: options.apiLimits, send: (body) => this.send(body), closed: this.closedSignal.signal, principal };
    this.unregister = options.service.onStop(() => this.stop());
    ws.on('message', (data, isBinary) => withSource(socket as Socket, () => this.onMessage(data as Buffer, isBinary)));
    ws.on('close', () => this.cleanup());
    ws.on('error', (error: Error & { code?: string }) => {
      // A frame ws refuses (WS_ERR_*: over maxPayload, bad opcode, invalid UTF-8): ws has already
      // sent its close frame (1009, 1002, 1007); let the client read it rather than a reset, but
      // bounded. Anything else (the socket failed) ends the session at once.
      if (typeof error.code === 'string' && error.code.startsWith('WS_ERR_')) {
        setTimeout(() => ws.terminate(), streamCloseGraceMs).unref();
      } else {
        ws.terminate();
      }
    });
  }

  /** Sends one frame; a client that stopped reading answers altogether is disconnected. */
  send(body: Record<string, unknown> | string): void {
    if (this.closed) return;
    if (this.ws.bufferedAmount > this.options.streamLimits.socketBufferedBytesMax) {
      this.ws.close(1008, 'slow consumer: the client stopped reading');
      this.cleanup();
      return;
    }
    this.ws.send(typeof body === 'string' ? body : JSON.stringify(body), this.written);
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (this.closed) return;
    const text = data.toString('utf8');
    let frame: Frame;
    try {
      if (isBinary) throw new InvalidArgumentError('frames are JSON text, not binary');
      frame = parseFrame(text);
    } catch (error) {
      this.answerError(isBinary ? null : salvageId(text), error);
      return;
    }
    if (this.inFlight >= this.options.streamLimits.requestsInFlightMax) {
      this.answerError(frame.id, new OverloadedError(`more than ${this.inFlight} requests in flight on this stream`));
      return;
    }
    this.inFlight++;
    let answer;
    try {
      answer = this.options.registry.handler(frame.type)(frame, this.context, this);
    } catch (error) {
      this.inFlight--;
      this.answerError(frame.id, error);
      return;
    }
    Promise.resolve(answer).then(
      (result) => {
        this.inFlight--;
        if (result !== undefined) this.send({ id: frame.id, type: 'result', result });
      },
      (error: unknown) => {
        this.inFlight--;
        this.answerError(frame.id, error);
      },
    );
  }

  private answerError(id: string | number | null, error: unknown): void {
    if (!(error instanceof BatonError)) {
      this.options.logError(error);
      this.send({ id, type: 'error', error: { code: 'internal', message: 'internal error' } });
      return;
    }
    // A refusal with the node's own guidance (a tenant's quota, the session gate) carries it, as
    // HTTP's Retry-After: the stream has no headers per frame.
    const retryAfter = (error as { retryAfterSeconds?: unknown }).retryAfterSeconds;
    const guidance = typeof retryAfter === 'number' ? { retryAfterSeconds: retryAfter } : {};
    this.send({ id, type: 'error', error: { code: error.code, message: error.message, ...error.details, ...guidance } });
  }

  private schedule(): void {
    if (this.flushScheduled || this.closed) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  private onWritten(): void {
    if (this.connection.hasReady && this.ws.bufferedAmount < this.options.streamLimits.socketBufferedBytesHigh) {
      this.schedule();
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    const high = this.options.streamLimits.socketBufferedBytesHigh;
    this.socket.cork();
    try {
      while (!this.closed && this.ws.bufferedAmount < high) {
        const output = this.connection.next();
        if (output === null) return;
        this.write(output);
      }
      // Over the mark: the next write callback (onWritten) resumes the pump.
    } finally {
      this.socket.uncork();
    }
  }

  private write(output: WatchOutput<WatchTag>): void {
    const { id, key } = output.tag;
    const watch = this.watches.get(key);
    if (watch === undefined) return; // canceled meanwhile
    if (output.type === 'batch') {
      const text = batchJson(output.batch, watch);
      this.send(watch.eventsHead + text.slice(1));
      this.service.delivered(output.batch);
      return;
    }
    forgetWatch(this, key);
    if (output.reason === 'canceled') return;
    const { error } = output;
    const body = watchEndError(output.reason, error?.details ?? {}, error?.message ?? '', output.lastRevision);
    this.send({ id, type: 'error', error: body });
  }

  /** The node is stopping: every watch has its end queued; write them, then close. */
  private stop(): void {
    for (let output = this.connection.next(); output !== null; output = this.connection.next()) this.write(output);
    this.ws.close(1001, 'the node is stopping');
    this.cleanup();
  }

  private cleanup(): void {
    if (this.closed) return;
    this.closed = true;
    for (const watch of this.watches.values()) if (watch.timer !== null) clearInterval(watch.timer);
    this.watches.clear();
    this.connection.close();
    this.unregister();
    this.closedSignal.abort(new UnavailableError('the stream closed before the answer'));
  }
}
