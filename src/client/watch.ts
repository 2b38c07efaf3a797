// watch() as an async iterator over the client's stream. The iterator owns the resume point:
// after every batch it knows that everything at or below batch.revision was delivered, so after
// a dropped connection, a stopping node or a slow_consumer end it re-creates the watch (on
// whichever endpoint the stream reaches next) from revision + 1. The server guarantees whole
// revisions per batch, in order; the iterator also drops any event below its resume point, so
// a replay can never surface a duplicate. `compacted` is not resumable without a re-read: the
// iterator throws CompactedError (details.compactRevision) and the caller re-reads and resumes.
// Through a router, a watch ended by a namespace move (`wrong_cell` at the fence, lastRevision =
// the fence) is re-created the same way: the router then sends it to the namespace's new cell,
// which serves it from the fence + 1 without gap or duplicate (docs/design/cells.md).
import { CompactedError, SlowConsumerError, type BatonError } from '../base/errors.js';
import { ClosedError, errorFromWire } from './errors.js';
import type { ServerFrame, StreamConnection, StreamSubscriber } from './stream-connection.js';

/** What a watch needs from the stream (a fake in unit tests). */
export type WatchStream = Pick<StreamConnection, 'subscribe' | 'unsubscribe' | 'send'>;
import type { WatchBatch, WatchEvent } from './types.js';

export interface WatchOptions {
  readonly prefix?: boolean;
  /** First revision to deliver; absent or 0 = from now. */
  readonly startRevision?: number;
  readonly prevKv?: boolean;
  readonly filter?: 'put' | 'delete';
  /** Ask the server for progress batches this often (0 = never). */
  readonly progressMs?: number;
  /** Yield progress batches (events: []) too; default false (they still move the resume point). */
  readonly yieldProgress?: boolean;
  /**
   * Batches waiting for the loop to take them (default 10,000). Past this the watch ends with
   * SlowConsumerError (details.lastRevision = the last batch queued before it): memory stays
   * bounded, and the caller resumes from lastRevision + 1, as after the server's slow_consumer.
   */
  readonly bufferedBatchesMax?: number;
  readonly signal?: AbortSignal;
}

/** Codes after which the watch is simply re-created from the resume point. */
const resumableCodes = new Set([
  'unavailable',
  'slow_consumer',
  'overloaded',
  'quota_exceeded',
  'timeout',
]);

let watchCounter = 0;

/**
 * A resumable watch. Iterate it with `for await`; `cancel()` (or the signal) ends it.
 *
 * @example
 * for await (const batch of client.watch('/services/', { prefix: true, startRevision: 1 })) {
 *   for (const event of batch.events) console.log(event.type, event.kv.key, batch.revision);
 * }
 */
export class Watch implements AsyncIterable<WatchBatch> {
  /** The revision the next event must be at or above (everything below it was delivered). */
  private nextRevision: number;
  private currentId: string | null = null;
  private readonly queue: (WatchBatch | Error)[] = [];
  private wake: (() => void) | null = null;
  private ended = false;
  private resumeTimer: NodeJS.Timeout | null = null;
  /** The revision of the last batch handed to the queue (0 = none yet). */
  private lastQueuedRevision = 0;
  /** Re-creations after the first (for tests and metrics). */
  resumes = 0;

  constructor(
    private readonly stream: WatchStream,
    readonly key: string,
    private readonly options: WatchOptions = {},
    /** Told once when the watch ends (the client forgets it then). */
    private readonly notifyEnded: () => void = () => undefined,
    /**
     * For a watch "from now": the cell's current revision. With it the watch starts at a known
     * revision, so a connection lost before the server's `created` frame cannot open a gap
     * (without it, the re-created watch could only start "from now" again).
     */
    currentRevision?: () => Promise<number>,
    /** Whether the stream reaches a router (then a move's `wrong_cell` end is resumed, see the top). */
    private readonly routed: () => boolean = () => false,
  ) {
    this.nextRevision = options.startRevision ?? 0;
    options.signal?.addEventListener('abort', () => this.cancel(), { once: true });
    if (this.nextRevision > 0 || currentRevision === undefined) {
      this.subscribe();
      return;
    }
    currentRevision().then(
      (revision) => {
        if (this.ended) return;
        // A router's status names no revision (each cell has its own): then "from now", and the
        // server's `created` frame says where the watch starts.
        if (Number.isSafeInteger(revision) && revision >= 0) this.nextRevision = revision + 1;
        this.subscribe();
      },
      (error: unknown) => this.end(error instanceof Error ? error : new Error(String(error))),
    );
  }

  /** Everything below this revision has been delivered; resume from here. */
  get resumeRevision(): number {
    return this.nextRevision;
  }

  cancel(): void {
    if (this.ended) return;
    this.end(new ClosedError('watch canceled'));
  }

  async *[Symbol.asyncIterator](): AsyncIterator<WatchBatch> {
    try {
      for (;;) {
        const item = this.queue.shift();
        if (item === undefined) {
          if (this.ended) return;
          await new Promise<void>((resolve) => (this.wake = resolve));
          continue;
        }
        if (item instanceof ClosedError) return;
        if (item instanceof Error) throw item;
        yield item;
      }
    } finally {
      this.cancel();
    }
  }

  private subscribe(): void {
    const id = `w${++watchCounter}`;
    this.currentId = id;
    const subscriber: StreamSubscriber = {
      onConnected: () => this.sendWatch(id),
      onDisconnected: () => undefined, // re-sent by onConnected on the next connection
      onFrame: (frame) => this.onFrame(id, frame),
    };
    this.stream.subscribe(id, subscriber);
  }

  private sendWatch(id: string): void {
    if (this.ended || this.currentId !== id) return;
    const { prefix, prevKv, filter, progressMs } = this.options;
    this.stream.send({
      id,
      type: 'watch',
      key: this.key,
      ...(prefix === true ? { prefix } : {}),
      ...(this.nextRevision > 0 ? { startRevision: this.nextRevision } : {}),
      ...(prevKv === true ? { prevKv } : {}),
      ...(filter !== undefined ? { filter } : {}),
      ...(progressMs !== undefined ? { progressMs } : {}),
    });
  }

  private onFrame(id: string, frame: ServerFrame): void {
    if (this.ended || this.currentId !== id) return;
    if (frame.type === 'created') {
      if (this.nextRevision === 0) this.nextRevision = Number(frame['startRevision']);
    } else if (frame.type === 'events') {
      this.onBatch(Number(frame['revision']), (frame['events'] ?? []) as WatchEvent[]);
    } else if (frame.type === 'error') {
      this.onEnded(id, errorFromWire(frame['error']));
    } else if (frame.type === 'canceled') {
      const wire = { code: 'unavailable', message: 'watch canceled by the server' };
      this.onEnded(id, errorFromWire(wire));
    }
  }

  private onBatch(revision: number, events: readonly WatchEvent[]): void {
    // Never go back: a batch at or below what was delivered is a replay (nothing new in it).
    const fresh = events.filter((event) => event.kv.modRevision >= this.nextRevision);
    if (revision + 1 > this.nextRevision) this.nextRevision = revision + 1;
    if (fresh.length === 0 && this.options.yieldProgress !== true) return;
    if (this.queue.length >= (this.options.bufferedBatchesMax ?? 10_000)) {
      const lastRevision = this.lastQueuedRevision;
      const unread = this.queue.length;
      const message = `more than ${unread} batches unread; resume from ${lastRevision + 1}`;
      this.end(new SlowConsumerError(message, { lastRevision }));
      return;
    }
    this.lastQueuedRevision = revision;
    this.push({ revision, events: fresh });
  }

  private onEnded(id: string, error: BatonError): void {
    this.stream.unsubscribe(id);
    this.currentId = null;
    const moved = error.code === 'wrong_cell' && this.routed();
    if (error instanceof CompactedError || !(resumableCodes.has(error.code) || moved)) {
      this.end(error);
      return;
    }
    // The node stopped or shed this watch: re-create it (another node, maybe) after a short
    // jittered pause so that every watcher of a stopping node does not return at once.
    const lastRevision = Number(error.details['lastRevision'] ?? 0);
    if (lastRevision + 1 > this.nextRevision) this.nextRevision = lastRevision + 1;
    this.resumes++;
    this.resumeTimer = setTimeout(() => {
      this.resumeTimer = null;
      if (!this.ended) this.subscribe();
    }, 50 + Math.floor(Math.random() * 250));
  }

  private push(item: WatchBatch | Error): void {
    this.queue.push(item);
    this.wake?.();
    this.wake = null;
  }

  private end(reason: Error): void {
    if (this.ended) return;
    if (this.currentId !== null) {
      this.stream.send({ id: this.currentId, type: 'cancel' });
      this.stream.unsubscribe(this.currentId);
      this.currentId = null;
    }
    if (this.resumeTimer !== null) clearTimeout(this.resumeTimer);
    this.push(reason);
    this.ended = true;
    this.notifyEnded();
    this.wake?.();
    this.wake = null;
  }
}
