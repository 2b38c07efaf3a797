// One HTTP/2 request stream on the server side: what the gRPC layer sees of it. Incoming data and
// the client's end or reset arrive as callbacks; answers are queued (headers, data under the
// peer's flow-control windows, trailers) and leave with the connection's next write.
import type { H2Error } from './frames.js';

/** What the connection does for its streams (connection.ts implements it). */
import type { Socket } from 'node:net';

export interface StreamOwner {
  /** The connection's socket (its TLS peer names the caller: src/api/principal.ts). */
  readonly socket: Socket;
  /** Frames for `stream` are queued: send what its and the connection's windows allow. */
  pump(stream: H2Stream): void;
  /** Ends the stream now with RST_STREAM (after its queued frames are dropped). */
  resetStream(stream: H2Stream, code: H2Error): void;
  /** The request bodies of all the connection's streams, not yet handed to a handler. */
  addBufferedInput(bytes: number): void;
}

/** Where a stream's events go (the gRPC call that took it); a no-op until then. */
export interface StreamSink {
  onData(data: Buffer): void;
  /** The client ended its side. */
  onEnd(): void;
  /** The client reset the stream, or the connection went away: nothing more leaves. */
  onReset(code: number): void;
  /** Queued answer bytes fell below half the high-water mark after being above it. */
  onDrain(): void;
}

const noSink: StreamSink = {
  onData: () => {},
  onEnd: () => {},
  onReset: () => {},
  onDrain: () => {},
};

export type OutItem =
  | { readonly kind: 'headers'; readonly block: Buffer; readonly end: boolean }
  | { readonly kind: 'data'; data: Buffer };

export class H2Stream {
  /** Set by the gRPC layer when it takes the stream. */
  sink: StreamSink = noSink;

  /** Answer frames not yet written, in order. */
  readonly out: OutItem[] = [];
  /** DATA bytes in `out`. */
  queuedBytes = 0;
  /** Bytes the peer lets us send on this stream (may go negative after a SETTINGS change). */
  sendWindow: number;
  /** Bytes the client may still send before we grant more. */
  receiveWindow: number;
  /** Received DATA bytes since the last WINDOW_UPDATE for this stream. */
  receivedSinceUpdate = 0;
  remoteClosed = false;
  /** Our END_STREAM has been queued (no frame may follow it). */
  localEnded = false;
  /** Our END_STREAM was framed: the stream is closed once the client's side is too. */
  localClosed = false;
  reset = false;
  headersSent = false;
  /** Waits in the connection's queue for connection-window credit or a draining socket. */
  blocked = false;
  /** In the connection's list of streams to frame at its next flush. */
  dirty = false;
  /** write() answers false above this many queued bytes; sink.onDrain follows below half of it. */
  highWaterBytes = 256 * 1024;
  wantsDrain = false;

  get socket(): Socket {
    return this.owner.socket;
  }

  constructor(
    readonly id: number,
    private readonly owner: StreamOwner,
    sendWindow: number,
    receiveWindow: number,
  ) {
    this.sendWindow = sendWindow;
    this.receiveWindow = receiveWindow;
  }

  /** Response headers (once, before any data). */
  respond(block: Buffer): void {
    if (this.reset || this.localEnded || this.headersSent) return;
    this.headersSent = true;
    this.out.push({ kind: 'headers', block, end: false });
    this.owner.pump(this);
  }

  /** A DATA payload; returns false when the queued bytes are over `highWaterBytes`. */
  write(data: Buffer): boolean {
    if (this.reset || this.localEnded) return false;
    if (data.length > 0) {
      this.out.push({ kind: 'data', data });
      this.queuedBytes += data.length;
      this.owner.pump(this);
    }
    const below = this.queuedBytes <= this.highWaterBytes;
    if (!below) this.wantsDrain = true;
    return below;
  }

  /** Trailers with END_STREAM, after everything queued; or a trailers-only answer. */
  end(block: Buffer): void {
    if (this.reset || this.localEnded) return;
    this.localEnded = true;
    this.headersSent = true;
    this.out.push({ kind: 'headers', block, end: true });
    this.owner.pump(this);
  }

  /** Ends the stream at once (RST_STREAM); queued answers are dropped. */
  cancel(code: H2Error): void {
    if (this.reset) return;
    this.owner.resetStream(this, code);
  }

  /** Request bytes the gRPC layer holds for this stream (released with a negative count). */
  buffered(bytes: number): void {
    this.owner.addBufferedInput(bytes);
  }
}
