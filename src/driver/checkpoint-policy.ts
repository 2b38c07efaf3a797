// When a member checkpoints its state machine (a store that is itself durable at checkpoints,
// see LogStore.checkpoint) and how much log it keeps below the checkpoint. A checkpoint is cheap
// (one fdatasync of the store's file off the event loop), so it runs often: it bounds what a
// restart after an OS crash replays and how long freed pages wait to be reused. The log below
// it is kept for a while anyway, like etcd's snapshot catch-up entries, so a follower that lags
// a little catches up from entries instead of a whole-store snapshot.
import { assert } from '../base/assert.js';

export interface CheckpointOptions {
  /** Checkpoint once this many ticks passed since the last one while entries were applied... */
  readonly everyTicks: number;
  /** ...or as soon as this many entries were applied since it. */
  readonly everyEntries: number;
  /** Entries kept in the log below the durable index for followers that lag (etcd keeps 5,000)... */
  readonly keepEntries: number;
  /** ...but no more bytes of them than this. */
  readonly keepBytes: number;
}

export class CheckpointPolicy {
  private running = false;
  private ticks = 0;
  /** The applied index the last checkpoint made durable. */
  private durable: number;
  /** Cumulative entry bytes written up to each persisted Ready's last index, oldest first. */
  private marks: { index: number; bytes: number }[] = [];
  private bytesWritten = 0;

  constructor(private readonly options: CheckpointOptions, startIndex: number) {
    assert(options.everyTicks >= 1 && options.everyEntries >= 1 && options.keepEntries >= 0 && options.keepBytes >= 0,
      'checkpoint options are positive');
    this.durable = startIndex;
  }

  /** Entries of `bytes` bytes up to `lastIndex` reached the log. */
  onPersisted(lastIndex: number, bytes: number): void {
    this.bytesWritten += bytes;
    // A rewritten suffix ends at or below older marks: its mark replaces them.
    while (this.marks.length > 0 && (this.marks[this.marks.length - 1] as { index: number }).index >= lastIndex) this.marks.pop();
    this.marks.push({ index: lastIndex, bytes: this.bytesWritten });
  }

  tick(): void {
    this.ticks++;
  }

  /** Whether a checkpoint should start now, with `applied` entries applied. */
  due(applied: number): boolean {
    if (this.running || applied <= this.durable) return false;
    return this.ticks >= this.options.everyTicks || applied - this.durable >= this.options.everyEntries;
  }

  started(): void {
    assert(!this.running, 'one checkpoint at a time');
    this.running = true;
    this.ticks = 0;
  }

  /** A checkpoint ended; `durableIndex` is what it made durable (null: it failed). */
  finished(durableIndex: number | null): void {
    assert(this.running, 'a checkpoint was running');
    this.running = false;
    if (durableIndex !== null) this.durable = Math.max(this.durable, durableIndex);
  }

  /**
   * The index the log may start after once `durableIndex` is durable: `keepEntries` below it,
   * fewer if those hold more than `keepBytes`.
   */
  releaseIndex(durableIndex: number): number {
    let release = Math.max(0, durableIndex - this.options.keepEntries);
    const atDurable = this.bytesUpTo(durableIndex);
    // The newest mark at or below the durable index whose later entries exceed keepBytes.
    for (const mark of this.marks) {
      if (mark.index > durableIndex) break;
      if (atDurable - mark.bytes > this.options.keepBytes) release = Math.max(release, mark.index);
    }
    while (this.marks.length > 1 && (this.marks[1] as { index: number }).index <= release) this.marks.shift();
    return Math.min(release, durableIndex);
  }

  private bytesUpTo(index: number): number {
    let bytes = 0;
    for (const mark of this.marks) {
      if (mark.index > index) break;
      bytes = mark.bytes;
    }
    return bytes;
  }
}
