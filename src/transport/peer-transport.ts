// The node's Raft transport: a listener for peers' connections and, per peer, two outbound
// connections fed by bounded queues: the raft channel for appends and forwarded proposals, the
// control channel for everything small that someone waits on (heartbeats, answers, votes, reads,
// lease frames), so that megabytes of entries never delay a heartbeat's answer, a read round or
// a renewal. send() only queues; one flush per event-loop turn writes each queue as one buffer,
// which is where batching's 10x over write-per-message comes from. Snapshot messages leave on
// streams of their own.
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { crc32 } from 'node:zlib';
import { assert } from '../base/assert.js';
import type { MemberId, RaftMessage } from '../raft/index.js';
import { messageBytesIn } from './codec.js';
import { encodeLeaseFrame, type LeasePeerMessage } from './lease-frames.js';
import { acceptConnection, type InboundContext, type InboundCounters } from './inbound-connection.js';
import { Channel } from './handshake.js';
import { resolveTransportLimits } from './limits.js';
import { OutboundPeer } from './outbound-peer.js';
import { controlChannelVersion, travelsBulk } from './protocol.js';
import { dialPeer, identityRefusal } from './peer-tls.js';
import { collectSnapshotInMemory } from './snapshot-receiver.js';
import { sendSnapshotStream } from './snapshot-sender.js';
import type {
  OutgoingSnapshot, PeerAddress, PeerStats, PeerTransportOptions, SnapshotMessage, TransportLimits,
  TransportLogger, TransportStats,
} from './types.js';

const silentLogger: TransportLogger = { info: () => {}, warn: () => {} };
const mathRandom = { uint32: (): number => Math.floor(Math.random() * 0x1_0000_0000) };

export class PeerTransport {
  readonly limits: TransportLimits;
  private readonly logger: TransportLogger;
  private readonly peers = new Map<MemberId, OutboundPeer>();
  /** Each peer's control channel, used once its raft channel's listener accepted controlChannelVersion. */
  private readonly controls = new Map<MemberId, OutboundPeer>();
  /** Members removed while this process ran: told so when they dial (bounded by the ids ever added). */
  private readonly removed = new Set<MemberId>();
  /** Each member's current inbound connection per channel (key: inboundKey). */
  private readonly inboundLinks = new Map<string, Socket>();
  private readonly inboundSockets = new Set<Socket>();
  private readonly counters: InboundCounters = {
    receivedMessages: 0, receivedFrames: 0, rejectedConnections: 0, corruptFrames: 0, receivedBytes: new Map(),
  };
  private readonly snapshotAbort = new AbortController();
  private readonly snapshotsInFlight = new Set<Promise<boolean>>();
  private flushScheduled: NodeJS.Immediate | null = null;
  private microFlushQueued = false;
  private closed = false;

  private constructor(
    private readonly options: PeerTransportOptions,
    private readonly server: Server,
  ) {
    this.limits = resolveTransportLimits(options.limits);
    this.logger = options.logger ?? silentLogger;
    for (const [id, address] of options.peers) this.addPeer(id, address);
  }

  /** Starts listening on options.listen; resolves once connections can be accepted. */
  static async start(options: PeerTransportOptions): Promise<PeerTransport> {
    assert(Number.isSafeInteger(options.memberId) && options.memberId > 0, 'member id');
    assert(options.clusterId.length > 0, 'a cluster id');
    const tls = options.tls;
    const server = tls === undefined ? createServer() : createTlsServer({
      ...tls.material(), requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.2',
    });
    const transport = new PeerTransport(options, server);
    if (tls === undefined) {
      server.on('connection', (socket) => transport.accept(socket));
    } else {
      // Only a caller whose certificate chains to the peer CA gets here; its identity is checked at its handshake.
      server.on('secureConnection', (socket: TLSSocket) => {
        if (tls.admit?.(socket) === false) return void transport.counters.rejectedConnections++;
        transport.accept(socket);
      });
      server.on('tlsClientError', (error: Error, socket: TLSSocket) => transport.refusedTls(error, socket));
      tls.onReload(() => (server as ReturnType<typeof createTlsServer>).setSecureContext({ ...tls.material() }));
    }
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.listen.port, options.listen.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (error) => transport.logger.warn({ error: String(error) }, 'listener'));
    return transport;
  }

  /** The address actually bound (the ephemeral port when listen.port was 0). */
  address(): PeerAddress {
    const bound = this.server.address();
    assert(bound !== null && typeof bound === 'object', 'listening on TCP');
    return { host: bound.address, port: bound.port };
  }

  /**
   * Queues messages for their addressees; never blocks and never throws for network reasons.
   * Snapshot messages go out on a stream of their own (reportSnapshot tells how it went).
   */
  send(messages: readonly RaftMessage[]): void {
    if (this.closed) return;
    for (const message of messages) {
      assert(message.from === this.options.memberId, 'only our own messages leave');
      if (message.type === 'snapshot') {
        void this.sendSnapshot(message, inMemorySnapshot(message.snapshot.data, this.limits));
        continue;
      }
      const peer = this.linkFor(message.to, travelsBulk(message.type));
      if (peer === undefined) {
        this.logger.warn({ to: message.to, type: message.type }, 'message to unknown member');
        continue;
      }
      peer.enqueue(message, messageBytesIn(message, peer.version()));
    }
    this.scheduleFlush();
  }

  /**
   * Streams a snapshot whose data the caller reads on demand (e.g. from a snapshot file): the
   * receiver says how much of these exact bytes it already holds and `data.chunks` is read from
   * there. Resolves true once the peer stored it, false on any failure; also calls
   * reportSnapshot. `message.snapshot.data` is ignored (it may be empty).
   */
  sendSnapshot(message: SnapshotMessage, data: OutgoingSnapshot): Promise<boolean> {
    const peer = this.peers.get(message.to);
    if (this.closed || peer === undefined) {
      this.options.reportSnapshot?.(message.to, false);
      return Promise.resolve(false);
    }
    const header = { from: message.from, to: message.to, term: message.term,
      meta: message.snapshot.meta };
    const done = sendSnapshotStream({
      address: peer.address(), clusterId: this.options.clusterId, header, data, tls: this.options.tls,
      limits: this.limits, signal: this.snapshotAbort.signal,
    }).then((sent) => {
      if (sent.resumedAt > 0) {
        this.logger.info({ to: message.to, index: header.meta.index, ...sent },
          'snapshot transfer resumed');
      }
      return true;
    }, (error: unknown) => {
      this.logger.warn({ to: message.to, error: String(error) }, 'snapshot send failed');
      return false;
    }).then((ok) => {
      this.snapshotsInFlight.delete(done);
      if (!this.closed) this.options.reportSnapshot?.(message.to, ok);
      return ok;
    });
    this.snapshotsInFlight.add(done);
    return done;
  }

  /**
   * Queues a lease frame for member `to` on its control connection (else its raft one; flushed with this turn's
   * messages). False when it cannot go now (unknown member, closed, or the connection is backing
   * off after a failure): the caller should use another path or fail fast.
   */
  sendLease(to: MemberId, message: LeasePeerMessage): boolean {
    const peer = this.linkFor(to, false);
    if (this.closed || peer === undefined) return false;
    if (!peer.enqueueFrame(encodeLeaseFrame(message))) return false;
    this.scheduleFlush();
    return true;
  }

  isConnected(id: MemberId): boolean {
    return this.peers.get(id)?.stats().connected ?? false;
  }

  /** Membership changed: a new member, or a member's new address. */
  addPeer(id: MemberId, address: PeerAddress): void {
    assert(Number.isSafeInteger(id) && id > 0, 'member ids are positive integers');
    assert(Number.isInteger(address.port) && address.port > 0 && address.port < 65536, 'port');
    if (id === this.options.memberId) return;
    const existing = this.peers.get(id);
    if (existing !== undefined) {
      this.controls.get(id)?.setAddress(address);
      return existing.setAddress(address);
    }
    for (const channel of [Channel.raft, Channel.control] as const) {
      (channel === Channel.raft ? this.peers : this.controls).set(id, new OutboundPeer(id, address, {
        memberId: this.options.memberId, clusterId: this.options.clusterId, channel,
        limits: this.limits, logger: this.logger, random: this.options.random ?? mathRandom,
        scheduleFlush: () => this.scheduleFlush(),
        dial: (address, to) => dialPeer(address, to, this.options.tls),
        onRemoved: () => this.options.onRemovedByPeer?.(id),
      }));
    }
    this.removed.delete(id);
  }

  /** A member left: its connections close and its future connections are refused. */
  removePeer(id: MemberId): void {
    this.removed.add(id);
    this.peers.get(id)?.close();
    this.peers.delete(id);
    this.controls.get(id)?.close();
    this.controls.delete(id);
    for (const channel of [Channel.raft, Channel.control]) {
      this.inboundLinks.get(inboundKey(id, channel))?.destroy();
      this.inboundLinks.delete(inboundKey(id, channel));
    }
  }

  /**
   * Where a message to `to` goes: a bulky one on the raft channel; a small one on the control
   * channel when the peer speaks it (its listener accepted controlChannelVersion on the raft
   * channel) and that connection is not backing off, else on the raft channel too.
   */
  private linkFor(to: MemberId, bulk: boolean): OutboundPeer | undefined {
    const raft = this.peers.get(to);
    if (raft === undefined || bulk) return raft;
    const control = this.controls.get(to);
    const speaks = raft.acceptedVersion();
    if (control === undefined || speaks === null || speaks < controlChannelVersion) return raft;
    return control.canTake() ? control : raft;
  }

  stats(): TransportStats {
    const peers = new Map<MemberId, PeerStats>();
    for (const [id, peer] of this.peers) {
      const control = this.controls.get(id)?.stats();
      peers.set(id, control === undefined ? peer.stats() : withControl(peer.stats(), control));
    }
    return { peers, ...this.counters, receivedBytes: new Map(this.counters.receivedBytes) };
  }

  /** Stops listening, closes every connection and abandons snapshot streams. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.flushScheduled !== null) clearImmediate(this.flushScheduled);
    this.flushScheduled = null;
    for (const peer of this.peers.values()) peer.close();
    for (const peer of this.controls.values()) peer.close();
    this.snapshotAbort.abort();
    for (const socket of this.inboundSockets) socket.destroy();
    await Promise.all([
      new Promise<void>((resolve) => this.server.close(() => resolve())),
      ...this.snapshotsInFlight,
    ]);
  }

  private scheduleFlush(): void {
    if (this.flushScheduled !== null || this.closed) return;
    // One flush per event-loop turn: everything sent during this turn shares one write per peer.
    this.flushScheduled = setImmediate(() => this.flush());
  }

  /** See PeerSender.flushSoon: one flush after this callback's microtasks, however many ask. */
  flushSoon(): void {
    if (this.microFlushQueued || this.closed) return;
    this.microFlushQueued = true;
    queueMicrotask(() => {
      this.microFlushQueued = false;
      this.flush();
    });
  }

  /**
   * Writes what is queued now. A sender inside a setImmediate callback (the driver's pump) calls
   * it: the flush it scheduled would otherwise wait a whole event-loop turn, behind every socket
   * read of the next poll phase, on every hop of every request.
   */
  flush(): void {
    if (this.flushScheduled !== null) clearImmediate(this.flushScheduled);
    this.flushScheduled = null;
    if (this.closed) return;
    for (const peer of this.peers.values()) {
      // The control channel first: its small messages are the ones someone waits on.
      const control = this.controls.get(peer.id);
      control?.flush();
      peer.flush();
      const lost = peer.takeUnreachable();
      if ((control?.takeUnreachable() ?? false) || lost) this.options.reportUnreachable?.(peer.id);
      const noLedger = peer.takeNoLedger();
      if ((control?.takeNoLedger() ?? false) || noLedger) this.options.reportNoLedger?.(peer.id);
    }
  }

  private accept(socket: Socket): void {
    if (this.closed) return void socket.destroy();
    this.inboundSockets.add(socket);
    socket.on('close', () => {
      this.inboundSockets.delete(socket);
      for (const [key, linkSocket] of this.inboundLinks) {
        if (linkSocket === socket) this.inboundLinks.delete(key);
      }
    });
    acceptConnection(socket, this.inboundContext());
  }

  /** A TLS handshake failed (no certificate, one from another CA, expired, ...): refused before any frame. */
  private refusedTls(error: Error, socket: TLSSocket): void {
    this.counters.rejectedConnections++;
    this.logger.warn({ remote: `${socket.remoteAddress}:${socket.remotePort}`, error: error.message },
      'peer TLS handshake refused');
    socket.destroy();
  }

  private inboundContext(): InboundContext {
    const tls = this.options.tls;
    return {
      checkIdentity: tls === undefined ? undefined
        : (from, socket) => identityRefusal(tls, from, (socket as TLSSocket).getPeerCertificate()),
      memberId: this.options.memberId, clusterId: this.options.clusterId, limits: this.limits,
      logger: this.logger, counters: this.counters,
      isMember: (id) => this.peers.has(id),
      wasRemoved: (id) => this.removed.has(id),
      onMessages: this.options.onMessages,
      onLeaseMessage: this.options.onLeaseMessage,
      onSnapshot: this.options.onSnapshot ??
        collectSnapshotInMemory(this.limits, this.options.onMessages),
      registerConnection: (from, channel, socket) => {
        const key = inboundKey(from, channel);
        const previous = this.inboundLinks.get(key);
        this.inboundLinks.set(key, socket);
        // The peer reconnected (it restarted, or its old connection is half-open): keep one.
        if (previous !== undefined && previous !== socket) previous.destroy();
      },
    };
  }
}

function inboundKey(from: MemberId, channel: Channel): string {
  return `${from}/${channel}`;
}

/** A peer's figures over both its channels: counters add up; connection and version are the raft channel's. */
function withControl(raft: PeerStats, control: PeerStats): PeerStats {
  return {
    ...raft,
    controlConnected: control.connected,
    queuedMessages: raft.queuedMessages + control.queuedMessages,
    queuedBytes: raft.queuedBytes + control.queuedBytes,
    sentMessages: raft.sentMessages + control.sentMessages,
    sentWrites: raft.sentWrites + control.sentWrites,
    sentFrames: raft.sentFrames + control.sentFrames,
    sentBytes: raft.sentBytes + control.sentBytes,
    droppedMessages: raft.droppedMessages + control.droppedMessages,
    connectAttempts: raft.connectAttempts + control.connectAttempts,
    connectFailures: raft.connectFailures + control.connectFailures,
  };
}

/** In-memory snapshot data (small snapshots) as bounded chunks: views, not copies. */
function inMemorySnapshot(data: Uint8Array, limits: TransportLimits): OutgoingSnapshot {
  return {
    totalBytes: data.length,
    checksum: crc32(data),
    async *chunks(fromOffset) {
      for (let offset = fromOffset; offset < data.length; offset += limits.snapshotChunkBytes) {
        yield data.subarray(offset, offset + limits.snapshotChunkBytes);
      }
    },
  };
}
