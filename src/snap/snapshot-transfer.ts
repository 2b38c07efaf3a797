// Snapshots between members go file to file. The leader streams the snapshot FILE a message
// names (never the core's in-memory copy a second time), and the follower writes what arrives to
// a partial file that survives a dropped connection, verifies and installs it atomically, and
// only then loads it (once) and steps the snapshot message into its core. Raft's reportSnapshot
// still hears how each transfer ended, from the transport.
//
// A member whose store is durable at checkpoints writes no snapshot on a schedule: the core's
// log start names no file. A follower that needs a snapshot then gets the newest file at or past
// that index, made on demand from a read view of the store when there is none (one at a time,
// shared by every follower waiting). The message carries that file's own metadata: a follower
// installs whatever index it names, and the leader's core, which asked for an older one, learns
// the follower's new match from its answer.
import { setTimeout as sleep } from 'node:timers/promises';
import { assert } from '../base/assert.js';
import type { MemberId, SnapshotMeta } from '../raft/index.js';
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

/**
 * Writes a snapshot file of the state as it is now and resolves with its metadata (null when
 * none was written).
 */
export type MakeSnapshot = () => Promise<SnapshotMeta | null>;

interface InFlightReceive {
  readonly abort: () => void;
  readonly done: Promise<unknown>;
}

export class SnapshotTransfers {
  // The one receive in progress: a newer stream (the leader retried) supersedes it, so two
  // streams never write the same partial file.
  private receiving: InFlightReceive | null = null;
  /** The on-demand snapshot being written, shared by every send that needs it. */
  private making: Promise<SnapshotMeta | null> | null = null;

  constructor(
    private readonly store: SnapshotStore,
    private readonly options: SnapshotTransferOptions,
  ) {}

  /**
   * The driver's PeerSender: snapshot messages stream from a file, the rest go as they are. With
   * `makeSnapshot`, a message gets the newest file at or past its index, made when there is none;
   * without, the file it names (waiting a moment for a local snapshot being saved).
   */
  peerSender(transport: PeerTransport, makeSnapshot?: MakeSnapshot): PeerSender {
    return {
      send: (messages) => {
        if (!messages.some((message) => message.type === 'snapshot')) {
          return transport.send(messages);
        }
        const rest = [];
        for (const message of messages) {
          if (message.type === 'snapshot') void this.sendFromFile(transport, message, makeSnapshot);
          else rest.push(message);
        }
        transport.send(rest);
      },
      flush: () => transport.flush(),
      flushSoon: () => transport.flushSoon(),
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
      // Not loaded: the state machine reads the verified file in bounded pieces when it installs
      // it (a whole store need not fit in memory), and the core keeps only its metadata.
      assert(path === this.store.pathOf(incoming.meta), 'the installed file is named by its metadata');
      const { from, to, term } = incoming;
      step({ type: 'snapshot', from, to, term, snapshot: { meta: incoming.meta, data: new Uint8Array(0) } });
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

  private async sendFromFile(transport: PeerTransport, message: SnapshotMessage, make: MakeSnapshot | undefined): Promise<void> {
    const wanted = message.snapshot.meta;
    let source: SnapshotChunkSource;
    try {
      source = await SnapshotChunkSource.open(await this.fileFor(wanted, make));
    } catch (error) {
      this.options.logger.warn(`snapshot ${wanted.index} for member ${message.to} not sent: ` +
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
      // The file's own metadata: it may be newer than the index the core asked for.
      await transport.sendSnapshot({ ...message, snapshot: { meta: source.meta, data: message.snapshot.data } }, data);
    } finally {
      await source.close();
    }
  }

  /** The path of the file to send for `wanted`: its own, a newer one, or one made now. */
  private async fileFor(wanted: SnapshotMeta, make: MakeSnapshot | undefined): Promise<string> {
    if (make === undefined) {
      await this.waitForFile(wanted);
      return this.store.pathOf(wanted);
    }
    const newest = (await this.store.list())[0];
    if (newest !== undefined && newest.index >= wanted.index) return newest.path;
    this.making ??= make().finally(() => {
      this.making = null;
    });
    const made = await this.making;
    if (made === null || made.index < wanted.index) {
      throw new Error(`no snapshot at or after index ${wanted.index} could be made`);
    }
    return this.store.pathOf(made);
  }

  /** A snapshot the core just took is written in the background: give the save a moment. */
  private async waitForFile(meta: SnapshotMeta): Promise<void> {
    const deadline = performance.now() + (this.options.fileWaitMs ?? 5000);
    while (!(await this.store.has(meta))) {
      if (performance.now() > deadline) {
        throw new Error(`no snapshot file ${this.store.pathOf(meta)}`);
      }
      await sleep(50);
    }
  }
}
