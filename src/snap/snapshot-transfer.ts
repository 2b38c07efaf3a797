// Snapshots between members go file to file. The leader streams the snapshot FILE a message
// names (never the core's in-memory copy a second time), and the follower writes what arrives to
// a partial file that survives a dropped connection, verifies and installs it atomically, and
// only then loads it (once) and steps the snapshot message into its core. Raft's reportSnapshot
// still hears how each transfer ended, from the transport.
import { setTimeout as sleep } from 'node:timers/promises';
import type { MemberId } from '../raft/index.js';
import { SnapshotChunkSource, SnapshotReceiver, type SnapshotStore } from './index.js';
import type {
  IncomingSnapshot, OutgoingSnapshot, PeerTransport, SnapshotMessage,
} from '../transport/index.js';
import type { PeerSender } from '../transport/types.js';

export interface SnapshotTransferLogger {
  info(message: string): void;
  warn(message: string): void;
}

export interface SnapshotTransferOptions {
  /** Tells Raft a transfer failed before it reached the transport (e.g. no file). */
  readonly reportSnapshot: (to: MemberId, ok: boolean) => void;
  readonly logger: SnapshotTransferLogger;
  /** How long a send waits for the snapshot's file (a fresh local snapshot may be mid-save). */
  readonly fileWaitMs?: number;
}

interface InFlightReceive {
  readonly abort: () => void;
  readonly done: Promise<unknown>;
}

export class SnapshotTransfers {
  // The one receive in progress: a newer stream (the leader retried) supersedes it, so two
  // streams never write the same partial file.
  private receiving: InFlightReceive | null = null;

  constructor(
    private readonly store: SnapshotStore,
    private readonly options: SnapshotTransferOptions,
  ) {}

  /** The driver's PeerSender: snapshot messages stream from their file, the rest go as they are. */
  peerSender(transport: PeerTransport): PeerSender {
    return {
      send: (messages) => {
        if (!messages.some((message) => message.type === 'snapshot')) {
          return transport.send(messages);
        }
        const rest = [];
        for (const message of messages) {
          if (message.type === 'snapshot') void this.sendFromFile(transport, message);
          else rest.push(message);
        }
        transport.send(rest);
      },
      flush: () => transport.flush(),
    };
  }

  /** The transport's onSnapshot handler; `step` hands the loaded snapshot to the core. */
  async receive(
    incoming: IncomingSnapshot,
    step: (message: SnapshotMessage) => void,
  ): Promise<void> {
    const previous = this.receiving;
    if (previous !== null) {
      previous.abort();
      await previous.done.catch(() => {});
    }
    let abort = (): void => {};
    const aborted = new Promise<never>((_resolve, reject) => {
      abort = () => reject(new Error('superseded by a newer snapshot stream'));
    });
    aborted.catch(() => {});
    const done = this.receiveToFile(incoming, aborted);
    const entry = { abort, done };
    this.receiving = entry;
    try {
      const path = await done;
      this.options.logger.info(`snapshot ${incoming.meta.index} from member ${incoming.from} ` +
        `installed (${incoming.totalBytes} bytes)`);
      // Loaded once: this copy becomes the core's snapshot and then the state machine's input.
      const snapshot = await this.store.load(path);
      const { from, to, term } = incoming;
      step({ type: 'snapshot', from, to, term, snapshot });
    } finally {
      if (this.receiving === entry) this.receiving = null;
    }
  }

  private async receiveToFile(
    incoming: IncomingSnapshot,
    aborted: Promise<never>,
  ): Promise<string> {
    const { meta, totalBytes, checksum } = incoming;
    const receiver = await SnapshotReceiver.open(this.store, { meta, totalBytes, checksum });
    const resumedAt = receiver.receivedBytes;
    incoming.resumeAt(resumedAt);
    if (resumedAt > 0) {
      this.options.logger.info(`snapshot ${meta.index} from member ${incoming.from}: ` +
        `resuming at byte ${resumedAt} of ${totalBytes}`);
    }
    try {
      const chunks = incoming.chunks[Symbol.asyncIterator]();
      let offset = resumedAt;
      for (;;) {
        const next = await Promise.race([chunks.next(), aborted]);
        if (next.done === true) break;
        await receiver.write(offset, next.value);
        offset += next.value.length;
      }
      return await receiver.finish();
    } catch (error) {
      await receiver.abort(); // the partial file stays: the next stream resumes from it
      throw error;
    }
  }

  private async sendFromFile(transport: PeerTransport, message: SnapshotMessage): Promise<void> {
    const { meta } = message.snapshot;
    let source: SnapshotChunkSource;
    try {
      await this.waitForFile(meta);
      source = await SnapshotChunkSource.open(this.store.pathOf(meta));
    } catch (error) {
      this.options.logger.warn(`snapshot ${meta.index} for member ${message.to} not sent: ` +
        `${(error as Error).message}`);
      this.options.reportSnapshot(message.to, false);
      return;
    }
    const data: OutgoingSnapshot = {
      totalBytes: source.totalBytes,
      checksum: source.checksum,
      chunks: (fromOffset) => source.byteChunks(fromOffset),
    };
    try {
      await transport.sendSnapshot(message, data);
    } finally {
      await source.close();
    }
  }

  /** A snapshot the core just took is written in the background: give the save a moment. */
  private async waitForFile(meta: SnapshotMessage['snapshot']['meta']): Promise<void> {
    const deadline = performance.now() + (this.options.fileWaitMs ?? 5000);
    while (!(await this.store.has(meta))) {
      if (performance.now() > deadline) {
        throw new Error(`no snapshot file ${this.store.pathOf(meta)}`);
      }
      await sleep(50);
    }
  }
}
