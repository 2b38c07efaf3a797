// The server side of one HTTP/2 connection (RFC 9113), as little of it as gRPC needs: request
// streams from the client (no push, no priorities), flow control both ways, settings, ping,
// goaway. Node's HTTP/2 server (and grpc-js above it) cost about 8x the CPU per unary call of this
// one (measured with etcd's Go client: docs/benchmarks.md), mostly in per-stream JavaScript
// objects and per-frame callbacks. Answers made in one event-loop turn leave in one socket write.
//
// Errors: a malformed frame, header block or flow-control breach ends the connection (GOAWAY,
// then close); a stream-level one resets the stream (RST_STREAM). Bounds: frame size, header
// block and list size, concurrent streams, request bytes held per connection, control frames per
// second (PING, SETTINGS, RST_STREAM, ... floods), and answer bytes queued on a slow reader.
import type { Socket } from 'node:net';
import { assert } from '../../../base/assert.js';
import {
  Flag, FrameType, H2Error, Setting, clientPreface, frameBytesDefault, frameBytesLimit,
  frameHeaderBytes, goawayFrame, rstStreamFrame, settingsFrame, windowBytesDefault, windowBytesMax,
  windowUpdateFrame, writeFrameHeader,
} from './frames.js';
import { HpackDecoder, HpackError, type HeaderList } from './hpack.js';
import { H2Stream, type StreamOwner } from './stream.js';

export interface H2Limits {
  /** SETTINGS_MAX_CONCURRENT_STREAMS: more open streams are refused (RST_STREAM REFUSED_STREAM). */
  readonly streamsMax: number;
  /** A header block as received (HEADERS + CONTINUATION), and decoded (RFC 7541 sizes). */
  readonly headerBlockBytesMax: number;
  readonly headerListBytesMax: number;
  /** Our SETTINGS_INITIAL_WINDOW_SIZE, and the connection window we open at the start. */
  readonly streamWindowBytes: number;
  readonly connectionWindowBytes: number;
  /** Request bytes the gRPC layer may hold for one connection's streams (partial messages). */
  readonly bufferedInputBytesMax: number;
  /** Control frames a second: PING, SETTINGS, RST_STREAM, PRIORITY, WINDOW_UPDATE, empty DATA. */
  readonly controlFramesPerSecond: number;
  /** Above this many bytes queued in the socket no DATA is framed; at 4x a non-reader is cut. */
  readonly socketBufferedBytesMax: number;
}

export const defaultH2Limits: H2Limits = {
  streamsMax: 1000,
  headerBlockBytesMax: 16 * 1024,
  headerListBytesMax: 16 * 1024,
  streamWindowBytes: 1024 * 1024,
  connectionWindowBytes: 16 * 1024 * 1024,
  bufferedInputBytesMax: 64 * 1024 * 1024,
  controlFramesPerSecond: 10_000,
  socketBufferedBytesMax: 4 * 1024 * 1024,
};

export interface H2Handler {
  /** A new stream's request headers (decoded); `endStream`: the request has no body. */
  onStream(stream: H2Stream, headers: HeaderList, endStream: boolean): void;
}

interface Continuation {
  readonly id: number;
  readonly endStream: boolean;
  readonly parts: Buffer[];
  bytes: number;
}

export class H2Connection implements StreamOwner {
  private readonly streams = new Map<number, H2Stream>();
  private readonly hpack: HpackDecoder;
  private pendingInput: Buffer | null = null;
  private prefaceSeen = false;
  private settingsSeen = false;
  private continuation: Continuation | null = null;
  /** Invariant: stream ids from the client only grow; anything at or below is open or closed. */
  private lastStreamId = 0;
  private sendWindow = windowBytesDefault;
  private receiveWindow = windowBytesDefault;
  private receivedSinceUpdate = 0;
  private peerStreamWindow = windowBytesDefault;
  private peerFrameBytes = frameBytesDefault;
  private bufferedInput = 0;
  private controlTokens: number;
  private controlCheckedAt = performance.now();
  /** Streams with queued frames, framed at the next flush. */
  private dirty: H2Stream[] = [];
  /** Streams with DATA waiting for connection-window credit or a draining socket. */
  private blocked: H2Stream[] = [];
  private outParts: Buffer[] = [];
  private outBytes = 0;
  private flushScheduled = false;
  private readonly flushNow = (): void => this.flush();
  private spareDirty: H2Stream[] = [];
  private goingAway = false;
  private closed = false;
  /** Called once the connection is gone (for the server's bookkeeping). */
  onClose: () => void = () => {};

  constructor(
    readonly socket: Socket,
    private readonly handler: H2Handler,
    private readonly limits: H2Limits = defaultH2Limits,
  ) {
    assert(limits.streamWindowBytes <= windowBytesMax, 'the stream window fits 31 bits');
    assert(limits.connectionWindowBytes <= windowBytesMax, 'the connection window fits 31 bits');
    assert(limits.connectionWindowBytes >= windowBytesDefault, 'the connection window only grows');
    this.hpack = new HpackDecoder({ tableBytesMax: 4096, listBytesMax: limits.headerListBytesMax });
    this.controlTokens = limits.controlFramesPerSecond;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('error', () => this.close());
    socket.on('close', () => this.close());
    socket.on('drain', () => this.unblock());
    this.push(settingsFrame([
      [Setting.enablePush, 0],
      [Setting.maxConcurrentStreams, limits.streamsMax],
      [Setting.initialWindowSize, limits.streamWindowBytes],
      [Setting.maxHeaderListSize, limits.headerListBytesMax],
    ]));
    if (limits.connectionWindowBytes > windowBytesDefault) {
      this.push(windowUpdateFrame(0, limits.connectionWindowBytes - windowBytesDefault));
      this.receiveWindow = limits.connectionWindowBytes;
    }
    this.scheduleFlush();
  }

  get streamCount(): number {
    return this.streams.size;
  }

  /** Graceful end: no new streams; the connection closes once the open ones are done. */
  goaway(): void {
    if (this.closed || this.goingAway) return;
    this.goingAway = true;
    this.push(goawayFrame(this.lastStreamId, H2Error.noError, ''));
    this.scheduleFlush();
    if (this.streams.size === 0) this.endSoon();
  }

  destroy(): void {
    this.socket.destroy();
    this.close();
  }

  // --- StreamOwner ---

  pump(stream: H2Stream): void {
    if (this.closed || stream.reset) return;
    if (!stream.blocked && !stream.dirty) {
      stream.dirty = true;
      this.dirty.push(stream);
    }
    this.scheduleFlush();
  }

  /** The gRPC layer ends a stream (it knows: no callback). */
  resetStream(stream: H2Stream, code: H2Error): void {
    this.push(rstStreamFrame(stream.id, code));
    this.dropStream(stream);
    this.scheduleFlush();
  }

  /** A stream error found here (RFC 9113 §5.4.2): reset, and the gRPC layer hears it. */
  private streamError(stream: H2Stream, code: H2Error): void {
    this.resetStream(stream, code);
    stream.sink.onReset(code);
  }

  addBufferedInput(bytes: number): void {
    this.bufferedInput += bytes;
    assert(this.bufferedInput >= 0, 'buffered request bytes are released once');
    if (this.bufferedInput > this.limits.bufferedInputBytesMax) {
      this.fail(H2Error.enhanceYourCalm, 'too many request bytes held for one connection');
    }
  }

  // --- input ---

  private receive(chunk: Buffer): void {
    if (this.closed) return;
    let input = this.pendingInput === null ? chunk : Buffer.concat([this.pendingInput, chunk]);
    this.pendingInput = null;
    if (!this.prefaceSeen) {
      const seen = Math.min(input.length, clientPreface.length);
      if (!input.subarray(0, seen).equals(clientPreface.subarray(0, seen))) {
        return this.fail(H2Error.protocol, 'not an HTTP/2 connection preface');
      }
      if (seen < clientPreface.length) {
        this.pendingInput = input;
        return;
      }
      this.prefaceSeen = true;
      input = input.subarray(clientPreface.length);
    }
    let at = 0;
    while (!this.closed && input.length - at >= frameHeaderBytes) {
      const length = input.readUIntBE(at, 3);
      if (length > frameBytesDefault) {
        return this.fail(H2Error.frameSize, `a frame of ${length} bytes`);
      }
      if (input.length - at < frameHeaderBytes + length) break;
      const type = input[at + 3] as number;
      const flags = input[at + 4] as number;
      const id = input.readUInt32BE(at + 5) & 0x7fffffff;
      const payload = input.subarray(at + frameHeaderBytes, at + frameHeaderBytes + length);
      at += frameHeaderBytes + length;
      this.frame(type, flags, id, payload);
    }
    // The rest is less than a frame: copied, so the chunk it came in is not kept alive.
    if (!this.closed && at < input.length) this.pendingInput = Buffer.from(input.subarray(at));
  }

  private frame(type: number, flags: number, id: number, payload: Buffer): void {
    if (!this.settingsSeen) {
      // The client's preface ends with a SETTINGS frame (RFC 9113 §3.4).
      if (type !== FrameType.settings || (flags & Flag.ack) !== 0) {
        return this.fail(H2Error.protocol, 'the preface lacks SETTINGS');
      }
      this.settingsSeen = true;
    }
    if (this.continuation !== null && type !== FrameType.continuation) {
      return this.fail(H2Error.protocol, 'a header block interrupted');
    }
    switch (type) {
      case FrameType.data: return this.data(flags, id, payload);
      case FrameType.headers: return this.headers(flags, id, payload);
      case FrameType.continuation: return this.continued(flags, id, payload);
      case FrameType.settings: return this.settings(flags, id, payload);
      case FrameType.ping: return this.ping(flags, id, payload);
      case FrameType.windowUpdate: return this.windowUpdate(id, payload);
      case FrameType.rstStream: return this.rstStream(id, payload);
      case FrameType.priority:
        if (id === 0) return this.fail(H2Error.protocol, 'PRIORITY on stream 0');
        if (payload.length !== 5) return this.fail(H2Error.frameSize, 'PRIORITY of the wrong size');
        return this.charge();
      case FrameType.goaway:
        if (id !== 0) return this.fail(H2Error.protocol, 'GOAWAY on a stream');
        // The client opens no more streams; those open finish.
        this.goingAway = true;
        if (this.streams.size === 0) this.endSoon();
        return;
      case FrameType.pushPromise: return this.fail(H2Error.protocol, 'PUSH_PROMISE from a client');
      default: return this.charge(); // unknown frame types are ignored (RFC 9113 §4.1)
    }
  }

  private data(flags: number, id: number, payload: Buffer): void {
    if (id === 0) return this.fail(H2Error.protocol, 'DATA on stream 0');
    // Flow control counts the whole payload, padding included (RFC 9113 §6.9.1).
    if (payload.length > this.receiveWindow) {
      return this.fail(H2Error.flowControl, 'DATA beyond the connection window');
    }
    this.receiveWindow -= payload.length;
    this.receivedSinceUpdate += payload.length;
    if (this.receivedSinceUpdate >= this.limits.connectionWindowBytes / 2) {
      this.push(windowUpdateFrame(0, this.receivedSinceUpdate));
      this.receiveWindow += this.receivedSinceUpdate;
      this.receivedSinceUpdate = 0;
      this.scheduleFlush();
    }
    const stream = this.streams.get(id);
    if (stream === undefined) {
      if (id > this.lastStreamId) return this.fail(H2Error.protocol, 'DATA on an idle stream');
      return this.charge(); // closed: what was in flight when we ended it
    }
    if (stream.remoteClosed) return this.streamError(stream, H2Error.streamClosed);
    if (payload.length > stream.receiveWindow) return this.streamError(stream, H2Error.flowControl);
    stream.receiveWindow -= payload.length;
    stream.receivedSinceUpdate += payload.length;
    const body = this.unpad(flags, payload);
    if (body === null) return;
    const end = (flags & Flag.endStream) !== 0;
    if (body.length > 0) stream.sink.onData(body);
    else if (!end) this.charge();
    if (stream.reset || this.closed) return;
    if (end) return this.remoteEnd(stream);
    if (stream.receivedSinceUpdate >= this.limits.streamWindowBytes / 2) {
      this.push(windowUpdateFrame(id, stream.receivedSinceUpdate));
      stream.receiveWindow += stream.receivedSinceUpdate;
      stream.receivedSinceUpdate = 0;
      this.scheduleFlush();
    }
  }

  private headers(flags: number, id: number, payload: Buffer): void {
    if (id === 0) return this.fail(H2Error.protocol, 'HEADERS on stream 0');
    let fragment = this.unpad(flags, payload);
    if (fragment === null) return;
    if ((flags & Flag.priority) !== 0) {
      if (fragment.length < 5) {
        return this.fail(H2Error.frameSize, 'HEADERS too short for its priority');
      }
      fragment = fragment.subarray(5);
    }
    const endStream = (flags & Flag.endStream) !== 0;
    if ((flags & Flag.endHeaders) !== 0) return this.headerBlock(id, endStream, fragment);
    this.continuation = { id, endStream, parts: [Buffer.from(fragment)], bytes: fragment.length };
    this.checkBlockBytes(fragment.length);
  }

  private continued(flags: number, id: number, payload: Buffer): void {
    const continuation = this.continuation;
    if (continuation === null || continuation.id !== id) {
      return this.fail(H2Error.protocol, 'an unexpected CONTINUATION');
    }
    continuation.parts.push(Buffer.from(payload));
    continuation.bytes += payload.length;
    if (!this.checkBlockBytes(continuation.bytes)) return;
    if ((flags & Flag.endHeaders) === 0) return;
    this.continuation = null;
    const block = Buffer.concat(continuation.parts, continuation.bytes);
    this.headerBlock(id, continuation.endStream, block);
  }

  private checkBlockBytes(bytes: number): boolean {
    if (bytes <= this.limits.headerBlockBytesMax) return true;
    const limit = this.limits.headerBlockBytesMax;
    this.fail(H2Error.enhanceYourCalm, `a header block over ${limit} bytes`);
    return false;
  }

  private headerBlock(id: number, endStream: boolean, block: Buffer): void {
    let headers: HeaderList;
    try {
      // Decoded whatever becomes of the stream: the table must follow the client's.
      headers = this.hpack.decode(block);
    } catch (error) {
      if (error instanceof HpackError) return this.fail(H2Error.compression, error.message);
      throw error;
    }
    const open = this.streams.get(id);
    if (open !== undefined) {
      // Trailers from the client: they must end its side of the stream.
      if (open.remoteClosed || !endStream) return this.streamError(open, H2Error.protocol);
      return this.remoteEnd(open);
    }
    if (id <= this.lastStreamId) return this.charge(); // a stream we already closed
    if (id % 2 === 0) return this.fail(H2Error.protocol, 'a client stream with an even id');
    this.lastStreamId = id;
    if (this.goingAway || this.streams.size >= this.limits.streamsMax) {
      this.push(rstStreamFrame(id, H2Error.refusedStream));
      this.scheduleFlush();
      return this.charge();
    }
    const stream = new H2Stream(id, this, this.peerStreamWindow, this.limits.streamWindowBytes);
    stream.remoteClosed = endStream;
    this.streams.set(id, stream);
    this.handler.onStream(stream, headers, endStream);
  }

  private remoteEnd(stream: H2Stream): void {
    stream.remoteClosed = true;
    stream.sink.onEnd();
    if (stream.localClosed) this.dropStream(stream);
  }

  private settings(flags: number, id: number, payload: Buffer): void {
    if (id !== 0) return this.fail(H2Error.protocol, 'SETTINGS on a stream');
    if ((flags & Flag.ack) !== 0) {
      if (payload.length !== 0) {
        return this.fail(H2Error.frameSize, 'a SETTINGS ack with a payload');
      }
      return;
    }
    if (payload.length % 6 !== 0) return this.fail(H2Error.frameSize, 'SETTINGS of the wrong size');
    this.charge();
    for (let at = 0; at < payload.length; at += 6) {
      const setting = payload.readUInt16BE(at);
      const value = payload.readUInt32BE(at + 2);
      if (setting === Setting.enablePush && value > 1) {
        return this.fail(H2Error.protocol, 'ENABLE_PUSH above 1');
      }
      if (setting === Setting.initialWindowSize) {
        if (value > windowBytesMax) {
          return this.fail(H2Error.flowControl, 'INITIAL_WINDOW_SIZE above 2^31-1');
        }
        const delta = value - this.peerStreamWindow;
        this.peerStreamWindow = value;
        for (const stream of this.streams.values()) {
          stream.sendWindow += delta;
          if (stream.sendWindow > windowBytesMax) {
            return this.fail(H2Error.flowControl, 'a stream window above 2^31-1');
          }
          if (delta > 0 && stream.out.length > 0) this.pump(stream);
        }
      }
      if (setting === Setting.maxFrameSize) {
        if (value < frameBytesDefault || value > frameBytesLimit) {
          return this.fail(H2Error.protocol, 'MAX_FRAME_SIZE out of range');
        }
        this.peerFrameBytes = value;
      }
      // HEADER_TABLE_SIZE: our encoder never indexes; MAX_CONCURRENT_STREAMS: we push none.
    }
    this.push(Buffer.from([0, 0, 0, FrameType.settings, Flag.ack, 0, 0, 0, 0]));
    this.scheduleFlush();
  }

  private ping(flags: number, id: number, payload: Buffer): void {
    if (id !== 0) return this.fail(H2Error.protocol, 'PING on a stream');
    if (payload.length !== 8) return this.fail(H2Error.frameSize, 'PING of the wrong size');
    this.charge();
    if ((flags & Flag.ack) !== 0) return;
    const answer = Buffer.allocUnsafe(frameHeaderBytes + 8);
    writeFrameHeader(answer, 0, 8, FrameType.ping, Flag.ack, 0);
    answer.set(payload, frameHeaderBytes);
    this.push(answer);
    this.scheduleFlush();
  }

  private windowUpdate(id: number, payload: Buffer): void {
    if (payload.length !== 4) {
      return this.fail(H2Error.frameSize, 'WINDOW_UPDATE of the wrong size');
    }
    this.charge();
    const increment = payload.readUInt32BE(0) & 0x7fffffff;
    if (id === 0) {
      if (increment === 0) return this.fail(H2Error.protocol, 'a zero window increment');
      this.sendWindow += increment;
      if (this.sendWindow > windowBytesMax) {
        return this.fail(H2Error.flowControl, 'the connection window above 2^31-1');
      }
      return this.unblock();
    }
    const stream = this.streams.get(id);
    if (stream === undefined) {
      if (id > this.lastStreamId) this.fail(H2Error.protocol, 'WINDOW_UPDATE on an idle stream');
      return;
    }
    if (increment === 0) return this.streamError(stream, H2Error.protocol);
    stream.sendWindow += increment;
    if (stream.sendWindow > windowBytesMax) return this.streamError(stream, H2Error.flowControl);
    if (stream.out.length > 0) this.pump(stream);
  }

  private rstStream(id: number, payload: Buffer): void {
    if (id === 0) return this.fail(H2Error.protocol, 'RST_STREAM on stream 0');
    if (payload.length !== 4) return this.fail(H2Error.frameSize, 'RST_STREAM of the wrong size');
    this.charge();
    const stream = this.streams.get(id);
    if (stream === undefined) {
      if (id > this.lastStreamId) this.fail(H2Error.protocol, 'RST_STREAM on an idle stream');
      return;
    }
    this.dropStream(stream);
    stream.sink.onReset(payload.readUInt32BE(0));
  }

  /** The payload without its padding; null (and the connection failed) when the padding is bad. */
  private unpad(flags: number, payload: Buffer): Buffer | null {
    if ((flags & Flag.padded) === 0) return payload;
    const padding = payload[0];
    if (padding === undefined || padding >= payload.length) {
      this.fail(H2Error.protocol, 'padding as long as the frame');
      return null;
    }
    return payload.subarray(1, payload.length - padding);
  }

  /** One control frame spent from the per-second budget; past it the connection is cut. */
  private charge(): void {
    const now = performance.now();
    const rate = this.limits.controlFramesPerSecond;
    const refill = ((now - this.controlCheckedAt) * rate) / 1000;
    this.controlTokens = Math.min(rate, this.controlTokens + refill);
    this.controlCheckedAt = now;
    if (--this.controlTokens < 0) this.fail(H2Error.enhanceYourCalm, 'too many control frames');
  }

  // --- output ---

  private push(part: Buffer): void {
    this.outParts.push(part);
    this.outBytes += part.length;
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || this.closed) return;
    this.flushScheduled = true;
    setImmediate(this.flushNow);
  }

  /** Frames what the streams queued this turn and writes it all in one socket write. */
  private flush(): void {
    this.flushScheduled = false;
    if (this.closed) return;
    const dirty = this.dirty;
    this.dirty = this.spareDirty;
    let drained: H2Stream[] | null = null;
    for (const stream of dirty) {
      stream.dirty = false;
      if (this.frameStream(stream) && stream.wantsDrain) (drained ??= []).push(stream);
    }
    dirty.length = 0;
    this.spareDirty = dirty;
    if (this.outBytes > 0) {
      const parts = this.outParts;
      const data = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, this.outBytes);
      this.socket.write(data);
      parts.length = 0;
      this.outBytes = 0;
      // A client that reads nothing: cut, rather than queue its answers without bound.
      const cutBytes = 4 * this.limits.socketBufferedBytesMax;
      if (this.socket.writableLength > cutBytes) return this.destroy();
    }
    for (const stream of drained ?? []) {
      stream.wantsDrain = false;
      if (!stream.reset) stream.sink.onDrain();
    }
  }

  /**
   * Frames the stream's queue as far as the windows and the socket allow. Returns true when its
   * queued DATA is down to half its high-water mark (drained enough for more writes).
   */
  private frameStream(stream: H2Stream): boolean {
    while (stream.out.length > 0 && !stream.reset) {
      const item = stream.out[0];
      assert(item !== undefined, 'a queued answer frame');
      if (item.kind === 'headers') {
        this.pushHeaders(stream.id, item.block, item.end);
        stream.out.shift();
        if (item.end) this.localEnd(stream);
        continue;
      }
      const windows = Math.min(stream.sendWindow, this.sendWindow);
      const allowed = Math.min(item.data.length, windows, this.peerFrameBytes);
      const socketBytes = this.socket.writableLength + this.outBytes;
      const socketFull = socketBytes > this.limits.socketBufferedBytesMax;
      if (allowed <= 0 || socketFull) {
        // Waits for a WINDOW_UPDATE (stream: that update pumps it) or the connection / socket.
        if ((this.sendWindow <= 0 || socketFull) && !stream.blocked) {
          stream.blocked = true;
          this.blocked.push(stream);
        }
        break;
      }
      const header = Buffer.allocUnsafe(frameHeaderBytes);
      writeFrameHeader(header, 0, allowed, FrameType.data, 0, stream.id);
      this.push(header);
      this.push(allowed === item.data.length ? item.data : item.data.subarray(0, allowed));
      stream.sendWindow -= allowed;
      this.sendWindow -= allowed;
      stream.queuedBytes -= allowed;
      if (allowed === item.data.length) stream.out.shift();
      else item.data = item.data.subarray(allowed);
    }
    return stream.queuedBytes <= stream.highWaterBytes / 2;
  }

  private pushHeaders(id: number, block: Buffer, end: boolean): void {
    const endFlag = end ? Flag.endStream : 0;
    if (block.length <= this.peerFrameBytes) {
      const header = Buffer.allocUnsafe(frameHeaderBytes);
      writeFrameHeader(header, 0, block.length, FrameType.headers, Flag.endHeaders | endFlag, id);
      this.push(header);
      this.push(block);
      return;
    }
    for (let at = 0; at < block.length; at += this.peerFrameBytes) {
      const piece = block.subarray(at, Math.min(block.length, at + this.peerFrameBytes));
      const last = at + piece.length >= block.length;
      const type = at === 0 ? FrameType.headers : FrameType.continuation;
      const flags = (last ? Flag.endHeaders : 0) | (at === 0 ? endFlag : 0);
      const header = Buffer.allocUnsafe(frameHeaderBytes);
      writeFrameHeader(header, 0, piece.length, type, flags, id);
      this.push(header);
      this.push(piece);
    }
  }

  private localEnd(stream: H2Stream): void {
    stream.localClosed = true;
    if (stream.remoteClosed) return this.dropStream(stream);
    // The answer is complete: the client may stop sending (RFC 9113 §8.1, RST_STREAM NO_ERROR).
    this.push(rstStreamFrame(stream.id, H2Error.noError));
    this.dropStream(stream);
  }

  private unblock(): void {
    if (this.closed || this.blocked.length === 0) return;
    const blocked = this.blocked;
    this.blocked = [];
    for (const stream of blocked) {
      stream.blocked = false;
      this.pump(stream);
    }
  }

  private dropStream(stream: H2Stream): void {
    stream.reset = stream.reset || !stream.localClosed || !stream.remoteClosed;
    stream.out.length = 0;
    stream.queuedBytes = 0;
    this.streams.delete(stream.id);
    if (this.goingAway && this.streams.size === 0) this.endSoon();
  }

  private endSoon(): void {
    setImmediate(() => {
      this.flush();
      this.socket.end();
    });
  }

  /** A connection error: GOAWAY with the code, then close (RFC 9113 §5.4.1). */
  private fail(code: H2Error, message: string): void {
    if (this.closed) return;
    this.outParts.length = 0;
    this.outBytes = 0;
    this.socket.end(goawayFrame(this.lastStreamId, code, message));
    // A client that does not close its side is cut after a moment.
    setTimeout(() => this.socket.destroy(), 1000).unref();
    this.close();
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    const streams = [...this.streams.values()];
    this.streams.clear();
    for (const stream of streams) {
      stream.reset = true;
      stream.out.length = 0;
      stream.sink.onReset(H2Error.cancel);
    }
    this.onClose();
  }
}
