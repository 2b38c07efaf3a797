// One peer's outbound channel (raft or control, handshake.ts): a bounded queue, one TCP
// connection, one socket write per flush, and reconnects with jittered exponential backoff. Raft tolerates lost messages but not
// unbounded memory, so whatever cannot be queued or delivered is dropped, counted and reported
// (the leader then probes the follower instead of streaming to it blindly).
import type { Socket } from 'node:net';
import { assert } from '../base/assert.js';
import type { MemberId, RaftMessage } from '../raft/index.js';
import { reconnectDelayMs } from './backoff.js';
import { TransportError } from './errors.js';
import {
  FrameKind, FrameReader, controlFrameBytesMax, encodeMessageFrames, messagesFrameBytes,
} from './frame.js';
import {
  Channel, decodeReply, encodeHandshake, fallbackVersion, isRemovalRefusal, protocolVersion,
} from './handshake.js';
import type { Dialled } from './peer-tls.js';
import { carriesMessage } from './protocol.js';
import type { PeerAddress, PeerStats, TransportLimits, TransportLogger } from './types.js';

export interface OutboundContext {
  readonly memberId: MemberId;
  /** What this connection carries; a control channel is dialled only in protocolVersion. */
  readonly channel: typeof Channel.raft | typeof Channel.control;
  readonly clusterId: string;
  readonly limits: TransportLimits;
  readonly logger: TransportLogger;
  readonly random: { uint32(): number };
  /** Asks the owner to run flush() soon (after a connect, a drain or a failure). */
  readonly scheduleFlush: () => void;
  /** Opens a connection to member `to` (TCP, or TLS that checks its identity: peer-tls.ts). */
  readonly dial: (address: PeerAddress, to: MemberId) => Dialled;
  /** The peer refused us as a member removed from the cell. */
  readonly onRemoved?: () => void;
}

type State = 'idle' | 'connecting' | 'connected' | 'backoff' | 'closed';

export class OutboundPeer {
  private state: State = 'idle';
  private socket: Socket | null = null;
  private backoffTimer: NodeJS.Timeout | null = null;
  private stallTimer: NodeJS.Timeout | null = null;
  // Failed connection attempts since the last accepted handshake.
  private failures = 0;
  // The protocol version of the current (or next) connection: this member's own, unless the last
  // connection's listener refused it and named an older one both speak (a member not yet
  // upgraded). Every connection after that one tries the own version again (the peer may have
  // been upgraded meanwhile). Queued messages are sized and encoded in it.
  private speaks: number = protocolVersion;
  // The version the listener accepted on the current connection (null until its reply, and
  // whenever not connected): what a leader reads to know which build a peer runs.
  private accepted: number | null = null;
  // Set when the listener refused our version but speaks `fallback`: redial at once with it.
  private fallback: number | null = null;
  private waitingForDrain = false;
  // Invariant: queue.length === sizes.length; queuedBytes === sum(sizes).
  private queue: RaftMessage[] = [];
  private sizes: number[] = [];
  private queuedBytes = 0;
  // Pre-encoded frames (lease keepalives) waiting for the next flush; bounded like the queue.
  private frames: Buffer[] = [];
  private framesBytes = 0;
  // Set when messages were lost since the last takeUnreachable(); reported outside send().
  private unreachable = false;
  // Set when a ledger message was left out (the peer speaks a protocol before ledgerVersion).
  private noLedger = false;
  private counters = {
    sentMessages: 0, sentWrites: 0, sentFrames: 0, sentBytes: 0, droppedMessages: 0,
    connectAttempts: 0, connectFailures: 0,
  };

  constructor(
    readonly id: MemberId,
    private peerAddress: PeerAddress,
    private readonly context: OutboundContext,
  ) {
    assert(id !== context.memberId, 'no connection to oneself');
  }

  /** The protocol version queued messages are encoded in (messageBytes takes it for `size`). */
  version(): number {
    return this.speaks;
  }

  /** The version the listener accepted on the current connection (null: not connected or no answer yet). */
  acceptedVersion(): number | null {
    return this.accepted;
  }

  /** Can a message or frame be queued now (not closed, not backing off after a failure)? */
  canTake(): boolean {
    return this.state !== 'closed' && this.state !== 'backoff';
  }

  /** Queues a message of `size` encoded bytes, or drops it (counted) when it cannot go. */
  enqueue(message: RaftMessage, size: number): void {
    assert(message.to === this.id, 'message queued for its addressee');
    const limits = this.context.limits;
    if (this.state === 'closed' || this.state === 'backoff') return this.drop(1);
    // A peer of an older protocol knows no ledger messages: reported, so the asker stops waiting.
    if (!carriesMessage(message.type, this.speaks)) {
      this.noLedger = true;
      this.context.scheduleFlush();
      return;
    }
    if (messagesFrameBytes(size) > limits.frameBytesMax) {
      this.context.logger.warn({ peer: this.id, type: message.type, bytes: size },
        'message larger than a frame: dropped');
      return this.drop(1);
    }
    const full = this.queue.length >= limits.queueMessagesMax ||
      this.queuedBytes + size > limits.queueBytesMax;
    if (full) return this.drop(1);
    this.queue.push(message);
    this.sizes.push(size);
    this.queuedBytes += size;
    if (this.state === 'idle') this.connect();
  }

  /**
   * Queues a ready frame (not a Raft message) for the next flush. False when it cannot go now
   * (closed, backing off after a failure, or the queue is full): the caller takes another path.
   */
  enqueueFrame(frame: Buffer): boolean {
    const limits = this.context.limits;
    if (this.state === 'closed' || this.state === 'backoff') return false;
    if (this.frames.length >= limits.queueMessagesMax || this.framesBytes + frame.length > limits.queueBytesMax) {
      return false;
    }
    this.frames.push(frame);
    this.framesBytes += frame.length;
    if (this.state === 'idle') this.connect();
    return true;
  }

  /** Writes everything queued as one buffer, unless not connected or the socket is backed up. */
  flush(): void {
    const socket = this.socket;
    if (this.state !== 'connected' || socket === null) return;
    if (this.queue.length === 0 && this.frames.length === 0) return;
    if (this.waitingForDrain) return;
    if (socket.writableLength > this.context.limits.socketBufferedBytesMax) {
      // A slow peer: stop writing so memory stays bounded; the queue's bound takes over.
      this.waitingForDrain = true;
      this.stallTimer = setTimeout(() => {
        this.context.logger.warn({ peer: this.id }, 'peer stopped reading: reconnecting');
        socket.destroy();
      }, this.context.limits.writeStallTimeoutMs);
      this.stallTimer.unref();
      return;
    }
    const parts: Buffer[] = [];
    if (this.queue.length > 0) {
      parts.push(encodeMessageFrames(this.queue, this.sizes, this.context.limits, this.speaks));
    }
    parts.push(...this.frames);
    const buffer = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
    this.counters.sentMessages += this.queue.length;
    this.counters.sentWrites++;
    this.counters.sentBytes += buffer.length;
    this.counters.sentFrames += countFrames(buffer);
    this.queue = [];
    this.sizes = [];
    this.queuedBytes = 0;
    this.frames = [];
    this.framesBytes = 0;
    socket.write(buffer);
  }

  /** True once per loss episode: the owner then calls reportUnreachable(id). */
  /** True once after a ledger message was left out for this peer's older protocol. */
  takeNoLedger(): boolean {
    const was = this.noLedger;
    this.noLedger = false;
    return was;
  }

  takeUnreachable(): boolean {
    const was = this.unreachable;
    this.unreachable = false;
    return was;
  }

  address(): PeerAddress {
    return this.peerAddress;
  }

  setAddress(address: PeerAddress): void {
    const previous = this.peerAddress;
    const changed = address.host !== previous.host || address.port !== previous.port;
    this.peerAddress = address;
    if (changed && this.socket !== null) this.socket.destroy(); // reconnect to the new address
  }

  stats(): PeerStats {
    return {
      connected: this.state === 'connected',
      acceptedVersion: this.accepted,
      queuedMessages: this.queue.length,
      queuedBytes: this.queuedBytes,
      ...this.counters,
    };
  }

  close(): void {
    this.state = 'closed';
    this.accepted = null;
    this.clearStall();
    if (this.backoffTimer !== null) clearTimeout(this.backoffTimer);
    this.backoffTimer = null;
    this.socket?.destroy();
    this.socket = null;
    this.queue = [];
    this.sizes = [];
    this.queuedBytes = 0;
    this.frames = [];
    this.framesBytes = 0;
  }

  private clearStall(): void {
    this.waitingForDrain = false;
    if (this.stallTimer !== null) clearTimeout(this.stallTimer);
    this.stallTimer = null;
  }

  private drop(count: number): void {
    this.counters.droppedMessages += count;
    this.unreachable = true;
    this.context.scheduleFlush();
  }

  private connect(): void {
    assert(this.state === 'idle' && this.socket === null, 'one connection at a time');
    this.state = 'connecting';
    this.counters.connectAttempts++;
    const { socket, readyEvent } = this.context.dial(this.peerAddress, this.id);
    this.socket = socket;
    const reader = new FrameReader(controlFrameBytesMax); // the listener only replies
    let accepted = false;
    // An unanswered SYN or handshake would otherwise hold the queue for the OS's connect timeout.
    socket.setTimeout(this.context.limits.handshakeTimeoutMs, () => {
      this.context.logger.warn({ peer: this.id }, 'peer did not answer in time');
      socket.destroy();
    });
    socket.on(readyEvent, () => {
      // Messages follow the handshake at once: waiting a round trip for the reply would delay
      // the first heartbeat; if the listener refuses, it discards them and Raft resends.
      socket.write(encodeHandshake({
        version: this.speaks, channel: this.context.channel, clusterId: this.context.clusterId,
        from: this.context.memberId, to: this.id,
      }));
      this.state = 'connected';
      this.context.scheduleFlush();
    });
    socket.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
        for (let frame = reader.next(); frame !== null; frame = reader.next()) {
          // The listener answers once and then only reads: anything more is a protocol error.
          if (accepted) throw new TransportError('unexpectedFrame', 'data after the reply');
          const reply = decodeReply(frame, FrameKind.handshakeReply);
          if (!reply.accepted) {
            if (isRemovalRefusal(reply.reason)) this.context.onRemoved?.();
            // A control channel has no older version to fall back to: the caller uses the raft one.
            this.fallback = this.context.channel === Channel.control ? null
              : fallbackVersion(reply.reason, this.speaks);
            if (this.fallback !== null) {
              this.context.logger.info({ peer: this.id, tried: this.speaks, version: this.fallback },
                'peer speaks an older protocol version: dialling again with it');
              socket.destroy();
              return;
            }
            throw new TransportError('rejected', reply.reason);
          }
          accepted = true;
          this.accepted = this.speaks;
          this.failures = 0;
          socket.setTimeout(0); // from here on, stalled writes are watched by flush()
        }
      } catch (error) {
        this.context.logger.warn({ peer: this.id, channel: this.context.channel, error: String(error) },
          'peer refused us');
        socket.destroy();
      }
    });
    socket.on('drain', () => {
      this.clearStall();
      this.context.scheduleFlush();
    });
    socket.on('error', () => {}); // 'close' follows and handles every failure the same way
    socket.on('close', () => this.onClose(socket, accepted));
  }

  private onClose(socket: Socket, accepted: boolean): void {
    if (this.socket !== socket) return;
    this.socket = null;
    this.accepted = null;
    this.clearStall();
    if (this.state === 'closed') return;
    // Whatever was queued or in the socket's buffer is lost; tell Raft so it probes again.
    this.drop(this.queue.length);
    this.queue = [];
    this.sizes = [];
    this.queuedBytes = 0;
    // Lost lease frames need no report: their callers time out and retry.
    this.frames = [];
    this.framesBytes = 0;
    if (this.fallback !== null) {
      // Not a failure: the listener named a version both speak. Dial again with it (messages
      // queued from here on are encoded in it); the next connection tries our own again.
      assert(!accepted && this.fallback < this.speaks, 'a fallback goes down, once per connection');
      this.speaks = this.fallback;
      this.fallback = null;
      this.state = 'idle';
      this.connect();
      return;
    }
    this.speaks = protocolVersion;
    if (!accepted) {
      this.failures++;
      this.counters.connectFailures++;
    }
    const delay = reconnectDelayMs(Math.max(1, this.failures), this.context.limits,
      this.context.random);
    this.state = 'backoff';
    this.backoffTimer = setTimeout(() => {
      this.backoffTimer = null;
      if (this.state === 'backoff') this.state = 'idle';
    }, delay);
    this.backoffTimer.unref();
  }
}

function countFrames(buffer: Buffer): number {
  let frames = 0;
  for (let offset = 0; offset < buffer.length; frames++) offset += 8 + buffer.readUInt32LE(offset);
  return frames;
}
