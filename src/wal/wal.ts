// The write-ahead log the Raft driver saves through. Group commit: saves are encoded at once and
// queued; while one write+fdatasync is in flight every new save joins the next one, so a single
// fdatasync acknowledges many saves. The disk work runs on a worker thread (see executor.ts).
// After any I/O failure the WAL refuses all further work: a failed fdatasync cannot be retried
// safely (the kernel may have dropped the dirty pages), so the node must restart from disk.
import { join } from 'node:path';
import { assert } from '../base/assert.js';
import type { Entry, HardState, SnapshotMeta } from '../raft/index.js';
import { encodeEntry, encodeHardState, encodeSnapshotMeta } from './codec.js';
import { InlineExecutor, WorkerExecutor } from './executor.js';
import { LogView } from './log-view.js';
import { createSegment, planFlush, stateAfter } from './plan.js';
import type { LogState, PlanConfig, SegmentCursor } from './plan.js';
import { recoverWalDir } from './recover.js';
import { spareFileName } from './segment-name.js';
import { SpareSegment } from './spare.js';
import { RecordType, walDefaults } from './types.js';
import type {
  PendingRecord,
  RecoveredWal,
  WalExecutor,
  WalLogger,
  WalOp,
  WalOptions,
} from './types.js';

interface Waiter {
  readonly target: number;
  resolve(): void;
  reject(error: Error): void;
}

interface Release {
  readonly paths: readonly string[];
  resolve(): void;
  reject(error: Error): void;
}

export interface WalStats {
  readonly saves: number;
  readonly records: number;
  /** fdatasync calls for appends (segment creation excluded). */
  readonly syncs: number;
  readonly bytesWritten: number;
  readonly segmentsCreated: number;
  /** Rollovers that renamed a pre-filled spare instead of zero-filling on the sync thread. */
  readonly sparesUsed: number;
}

const stderrLogger: WalLogger = { warn: (message) => process.stderr.write(`${message}\n`) };

export class Wal {
  private readonly pending: PendingRecord[] = [];
  private readonly waiters: Waiter[] = [];
  private releases: Release[] = [];
  // Invariant: durableCount <= encodedCount; records are counted in save order.
  private encodedCount = 0;
  private durableCount = 0;
  private inFlight: Promise<void> | null = null;
  private failure: Error | null = null;
  private closed = false;
  private durableSnapshotIndex: number;
  private counters = {
    saves: 0,
    records: 0,
    syncs: 0,
    bytesWritten: 0,
    segmentsCreated: 0,
    sparesUsed: 0,
  };

  private constructor(
    private readonly config: PlanConfig,
    private readonly executor: WalExecutor,
    private readonly view: LogView,
    private hardState: HardState,
    private snapshot: SnapshotMeta | null,
    private cursor: SegmentCursor,
    private readonly segments: { seq: number; firstIndex: number; path: string }[],
    logger: WalLogger,
  ) {
    this.flushedState = { lastIndex: view.lastIndex, hardState, snapshot };
    this.durableSnapshotIndex = snapshot?.index ?? 0;
    const sparePath = join(config.walDir, spareFileName);
    this.spare = new SpareSegment(sparePath, config.segmentBytes, logger);
  }

  private readonly spare: SpareSegment;

  // The log state after the last record handed to the disk: what a new segment restates.
  private flushedState: LogState;

  /** Opens (or creates) the WAL under `<dataDir>/wal/` and returns what it holds. */
  static async open(
    dataDir: string,
    options: WalOptions = {},
  ): Promise<{ wal: Wal; recovered: RecoveredWal }> {
    const config: PlanConfig = {
      walDir: join(dataDir, 'wal'),
      segmentBytes: options.segmentBytes ?? walDefaults.segmentBytes,
      writeBytesMax: options.writeBytesMax ?? walDefaults.writeBytesMax,
      keys: options.keys ?? null,
    };
    assert(config.segmentBytes >= 4096 && config.writeBytesMax >= 1024, 'sane WAL sizes');
    const logger = options.logger ?? stderrLogger;
    const segmentBytes = config.segmentBytes;
    const restoreIndex = options.restoreIndex ?? null;
    const outcome = await recoverWalDir(config.walDir, { segmentBytes, logger, restoreIndex, keys: config.keys });
    const { hardState, snapshotMeta, entries, view } = outcome.replay;
    const executor = makeExecutor(options.executor);
    let cursor = outcome.tail;
    const segments = [...outcome.segments];
    try {
      // With encryption on, a plaintext last segment (written before it was), or one that seals
      // its records one by one (format 2, an older build's), gets no more records: appends go to
      // a new segment of this build's form (write-sealed, format 3) chained to it.
      const otherFormTail = cursor !== null && config.keys !== null && !cursor.sealsWrites;
      if (cursor === null || otherFormTail) {
        const state = { lastIndex: view.lastIndex, hardState, snapshot: snapshotMeta };
        const first = createSegment(cursor ?? { seq: 0, crc: 0 }, state, config, 0);
        await executor.run([first.op]);
        cursor = first.cursor;
        segments.push({ seq: cursor.seq, firstIndex: cursor.firstIndex, path: cursor.path });
      } else {
        await executor.run([{ type: 'open', seq: cursor.seq, path: cursor.path }]);
      }
    } catch (error) {
      await executor.close(); // no sync thread left behind
      throw error;
    }
    const wal = new Wal(config, executor, view, hardState, snapshotMeta, cursor, segments, logger);
    const recovered = { hardState, snapshotMeta, entries, truncated: outcome.truncated };
    return { wal, recovered };
  }

  get lastIndex(): number {
    return this.view.lastIndex;
  }

  /**
   * Persists `entries` then `hardState`; resolves once both are durable. An entry at an index
   * already written replaces that index and every later one (Raft's suffix overwrite).
   */
  save(entries: readonly Entry[], hardState: HardState | null): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.closed) return Promise.reject(new Error('the WAL is closed'));
    this.counters.saves++;
    for (const entry of entries) this.enqueueEntry(entry);
    if (hardState !== null) this.enqueueHardState(hardState);
    return this.waitFor(this.encodedCount);
  }

  /**
   * Records that a snapshot at `meta.index` is durable: the log now starts after it. A marker at
   * or below the current one is a no-op (after restoring from an older snapshot file).
   */
  async markSnapshot(meta: SnapshotMeta): Promise<void> {
    if (this.failure !== null) throw this.failure;
    assert(!this.closed, 'the WAL is open');
    if (meta.index <= (this.snapshot?.index ?? 0)) return;
    this.view.applySnapshot(meta);
    this.snapshot = meta;
    this.enqueue(RecordType.snapshot, encodeSnapshotMeta(meta));
    await this.waitFor(this.encodedCount);
    this.durableSnapshotIndex = Math.max(this.durableSnapshotIndex, meta.index);
  }

  /**
   * Deletes segments whose entries all lie at or below `index` and the durable snapshot marker.
   * Resolves with how many segments were removed. The newest segment always stays.
   */
  releaseBefore(index: number): Promise<number> {
    if (this.failure !== null) return Promise.reject(this.failure);
    const limit = Math.min(index, this.durableSnapshotIndex);
    let count = 0;
    // Segment k is wholly covered when the next segment starts at or below limit + 1.
    while ((this.segments[count + 1]?.firstIndex ?? Infinity) <= limit + 1) count++;
    if (count === 0) return Promise.resolve(0);
    const removed = this.segments.splice(0, count);
    assert(this.segments.length >= 1, 'the newest segment is never released');
    return new Promise<number>((resolve, reject) => {
      const paths = removed.map((segment) => segment.path);
      this.releases.push({ paths, resolve: () => resolve(count), reject });
      this.kick();
    });
  }

  /** Waits for queued saves, then closes the files and the sync thread. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.inFlight !== null) await this.inFlight;
    await this.spare.settled(); // left on disk; the next open removes it
    const ops: WalOp[] = [{ type: 'close', seq: this.cursor.seq }];
    await this.executor.run(ops).catch(() => undefined);
    await this.executor.close();
  }

  stats(): WalStats {
    return { ...this.counters };
  }

  private enqueueEntry(entry: Entry): void {
    const overwrites = entry.index <= this.view.lastIndex;
    const committed = this.hardState.commit;
    assert(!overwrites || entry.index > committed, 'committed entries are never rewritten');
    this.view.append(entry.index, entry.term);
    this.enqueue(RecordType.entry, encodeEntry(entry));
  }

  private enqueueHardState(hardState: HardState): void {
    assert(hardState.term >= this.hardState.term, 'the term never goes back');
    assert(hardState.commit >= this.hardState.commit, 'the commit index never goes back');
    this.hardState = hardState;
    this.enqueue(RecordType.hardState, encodeHardState(hardState));
  }

  private enqueue(frameType: RecordType, payload: Uint8Array): void {
    this.pending.push({
      frameType,
      payload,
      lastIndexAfter: this.view.lastIndex,
      hardStateAfter: this.hardState,
      snapshotAfter: this.snapshot,
    });
    this.encodedCount++;
  }

  private waitFor(target: number): Promise<void> {
    if (target <= this.durableCount) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ target, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.inFlight !== null || this.failure !== null) return;
    if (this.pending.length === 0 && this.releases.length === 0) return;
    // At once, in the caller's turn: the write is on the commit path, and the disk is idle.
    // Saves made while it is in flight are batched into the next write (group commit).
    this.inFlight = this.flush();
  }

  private async flush(): Promise<void> {
    const spare = this.pending.length === 0 ? null : this.spare.claim();
    const plan =
      this.pending.length === 0
        ? null
        : planFlush(this.cursor, this.pending, this.flushedState, this.config, spare);
    const releases = this.releases;
    this.releases = [];
    const ops: WalOp[] = plan === null ? [] : [...plan.ops];
    if (releases.length > 0) {
      const paths = releases.flatMap((release) => release.paths);
      ops.push({ type: 'unlink', paths, dir: this.config.walDir });
    }
    try {
      await this.executor.run(ops);
    } catch (error) {
      this.fail(error instanceof Error ? error : new Error(String(error)), releases);
      return;
    }
    if (plan !== null) this.completePlan(plan);
    this.spare.settle(plan?.usedSpare === true);
    if (!this.closed) this.spare.prepareIfDue(this.cursor);
    for (const release of releases) release.resolve();
    this.inFlight = null;
    this.kick();
  }

  private completePlan(plan: ReturnType<typeof planFlush>): void {
    const taken = this.pending.splice(0, plan.taken);
    const last = taken[taken.length - 1];
    assert(last !== undefined, 'a plan takes records');
    this.flushedState = stateAfter(last);
    this.cursor = plan.cursor;
    for (const segment of plan.created) {
      this.segments.push({ seq: segment.seq, firstIndex: segment.firstIndex, path: segment.path });
    }
    this.durableCount += plan.taken;
    assert(this.durableCount <= this.encodedCount);
    this.counters.records += plan.taken;
    this.counters.segmentsCreated += plan.created.length;
    if (plan.usedSpare) this.counters.sparesUsed++;
    this.counters.bytesWritten += plan.recordBytes;
    for (const op of plan.ops) if (op.type === 'sync') this.counters.syncs++;
    // Waiters are in target order; one splice instead of a shift per save.
    let ready = 0;
    while ((this.waiters[ready]?.target ?? Infinity) <= this.durableCount) ready++;
    for (const waiter of this.waiters.splice(0, ready)) waiter.resolve();
  }

  private fail(error: Error, releases: readonly Release[]): void {
    this.failure = error;
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
    for (const release of releases) release.reject(error);
    for (const release of this.releases.splice(0)) release.reject(error);
    this.inFlight = null;
  }
}

function makeExecutor(choice: WalOptions['executor']): WalExecutor {
  if (choice === undefined || choice === 'worker') return new WorkerExecutor();
  if (choice === 'inline') return new InlineExecutor();
  return choice;
}
