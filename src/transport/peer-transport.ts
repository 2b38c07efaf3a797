// The node's Raft transport: a listener for peers' connections and, per peer, one outbound
// connection fed by a bounded queue. send() only queues; one flush per event-loop turn writes
// each peer's queue as one buffer, which is where batching's 10x over write-per-message comes
// from. Snapshot messages leave on streams of their own so they never delay a heartbeat.
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { crc32 } from 'node:zlib';
import { assert } from '../base/assert.js';
import type { MemberId, RaftMessage } from '../raft/index.js';
import { messageBytesIn } from './codec.js';
import { encodeLeaseFrame, type LeasePeerMessage } from './lease-frames.js';
import { acceptConnection, type InboundContext, type InboundCounters } from './inbound-connection.js';
import { resolveTransportLimits } from './limits.js';
import { OutboundPeer } from './outbound-peer.js';
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
  /** Members removed while this process ran: told so when they dial (bounded by the ids ever added). */
  private readonly removed = new Set<MemberId>();
  private readonly inboundRaft = new Map<MemberId, Socket>();
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
      const peer = this.peers.get(message.to);
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
   * Queues a lease frame for member `to` on its Raft connection (flushed with this turn's
   * messages). False when it cannot go now (unknown member, closed, or the connection is backing
   * off after a failure): the caller should use another path or fail fast.
   */
  sendLease(to: MemberId, message: LeasePeerMessage): boolean {
    const peer = this.peers.get(to);
    if (this.closed || peer === undefined) return false;
    if (!peer.enqueueFrame(encodeLeaseFrame(message))) return false;
    this.scheduleFlush();
    return true;
  }

  /** Membership changed: a new member, or a member's new address. */
  addPeer(id: MemberId, address: PeerAddress): void {
    assert(Number.isSafeInteger(id) && id > 0, 'member ids are positive integers');
    assert(Number.isInteger(address.port) && address.port > 0 && address.port < 65536, 'port');
    if (id === this.options.memberId) return;
    const existing = this.peers.get(id);
    if (existing !== undefined) return existing.setAddress(address);
    this.peers.set(id, new OutboundPeer(id, address, {
      memberId: this.options.memberId, clusterId: this.options.clusterId, limits: this.limits,
      logger: this.logger, random: this.options.random ?? mathRandom,
      scheduleFlush: () => this.scheduleFlush(),
      dial: (address, to) => dialPeer(address, to, this.options.tls),
      onRemoved: () => this.options.onRemovedByPeer?.(id),
    }));
    this.removed.delete(id);
  }

  /** A member left: its connections close and its future connections are refused. */
  removePeer(id: MemberId): void {
    this.removed.add(id);
    this.peers.get(id)?.close();
    this.peers.delete(id);
    this.inboundRaft.get(id)?.destroy();
    this.inboundRaft.delete(id);
  }

  stats(): TransportStats {
    const peers = new Map<MemberId, PeerStats>();
    for (const [id, peer] of this.peers) peers.set(id, peer.stats());
    return { peers, ...this.counters, receivedBytes: new Map(this.counters.receivedBytes) };
  }

  /** Stops listening, closes every connection and abandons snapshot streams. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.flushScheduled !== null) clearImmediate(this.flushScheduled);
    this.flushScheduled = null;
    for (const peer of this.peers.values()) peer.close();
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
      peer.flush();
      if (peer.takeUnreachable()) this.options.reportUnreachable?.(peer.id);
      if (peer.takeNoLedger()) this.options.reportNoLedger?.(peer.id);
    }
  }

  private accept(socket: Socket): void {
    if (this.closed) return void socket.destroy();
    this.inboundSockets.add(socket);
    socket.on('close', () => {
      this.inboundSockets.delete(socket);
      for (const [id, raftSocket] of this.inboundRaft) {
        if (raftSocket === socket) this.inboundRaft.delete(id);
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
      registerRaftConnection: (from, socket) => {
        const previous = this.inboundRaft.get(from);
        this.inboundRaft.set(from, socket);
        // The peer reconnected (it restarted, or its old connection is half-open): keep one.
        if (previous !== undefined && previous !== socket) previous.destroy();
      },
    };
  }
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
