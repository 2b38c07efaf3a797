// The next segment, zero-filled ahead of time on libuv's thread pool while the sync worker keeps
// appending, so a rollover renames a ready file instead of writing 64 MiB of zeros in the way of
// the next group commit. Losing it (crash, error) costs only speed: the next open deletes it.
import { assert } from '../base/assert.js';
import { prepareSpareFile } from './io-ops.js';
import type { WalLogger } from './types.js';

type SpareState = 'none' | 'preparing' | 'ready' | 'inUse';

export class SpareSegment {
  private state: SpareState = 'none';
  private done: Promise<void> = Promise.resolve();

  constructor(
    readonly path: string,
    private readonly sizeBytes: number,
    private readonly logger: WalLogger,
  ) {}

  /** The file for the next plan, if one is ready; it is then in use until `settle`. */
  claim(): string | null {
    if (this.state !== 'ready') return null;
    this.state = 'inUse';
    return this.path;
  }

  /** After the batch that claimed it: `used` when it was renamed into place. */
  settle(used: boolean): void {
    if (this.state !== 'inUse') return;
    this.state = used ? 'none' : 'ready';
  }

  /** Starts preparing once the current segment is half full and no spare exists. */
  prepareIfDue(segment: { offset: number; sizeBytes: number }): void {
    if (this.state !== 'none' || segment.offset < segment.sizeBytes / 2) return;
    this.state = 'preparing';
    this.done = prepareSpareFile(this.path, this.sizeBytes).then(
      () => {
        assert(this.state === 'preparing', 'only one preparation at a time');
        this.state = 'ready';
      },
      (error: unknown) => {
        // Not fatal: the next rollover zero-fills on the worker instead.
        this.logger.warn(`wal: could not prepare the next segment ahead: ${String(error)}`);
        this.state = 'none';
      },
    );
  }

  /** Resolves when no preparation is running (before close). */
  settled(): Promise<void> {
    return this.done;
  }
}
