// A move's change feed from the source cell (docs/design/cells.md, "Moving a namespace"): one
// watch of the namespace on a source member, from the revision after the copy, streamed while the
// move catches up, so the changes left after the fence are the few of its last moments rather than
// a full read of the namespace. The source ends the watch with wrong_cell once it applies the
// fence, after every event of the namespace up to the fence: that end is the mover's proof that
// it holds every change the source ever accepted for the namespace (lastRevision: the fence).
// Any other end (compacted, unavailable, a dropped connection) marks the feed failed: the mover
// then falls back to reading the whole namespace.
import type { ImportedKey } from '../base/namespace-import.js';
import type { MapCell } from './cell-map.js';

/** How often the source says how far the watch got while nothing changes (a live feed's pulse). */
const progressMs = 100;
/** A feed nobody takes from (its move finished elsewhere, its leader stepped down) closes. */
const idleCloseMs = 30_000;

export interface FeedChanges {
  /** Key -> its newest state: a put with its revisions, or null (deleted). */
  readonly changes: Map<string, ImportedKey | null>;
  /** Every change of the namespace at or below this revision is in what was taken so far. */
  readonly through: number;
}

export class SourceFeed {
  private pending = new Map<string, ImportedKey | null>();
  /** Highest revision the source said the watch delivered through (events or progress). */
  private through: number;
  /** The source revision when the watch was created: past it, the feed is live. */
  private createdAt = Number.POSITIVE_INFINITY;
  private ended: { fenceRevision: number } | null = null;
  private failure: string | null = null;
  private readonly controller = new AbortController();
  private waiters: (() => void)[] = [];
  private lastTakeMs = Date.now();
  private readonly idleTimer: NodeJS.Timeout;

  constructor(private readonly cell: MapCell, private readonly prefix: string, startRevision: number) {
    this.through = startRevision - 1;
    this.idleTimer = setInterval(() => {
      if (Date.now() - this.lastTakeMs > idleCloseMs) this.close('idle');
    }, 5_000);
    this.idleTimer.unref();
    void this.run(startRevision);
  }

  /** The source ended the watch at its fence: everything of the namespace is in the feed. */
  get fenceRevision(): number | null {
    return this.ended?.fenceRevision ?? null;
  }

  get failed(): string | null {
    return this.failure;
  }

  /** The watch got to where the source stood when it was created (it streams live now). */
  get live(): boolean {
    return this.through >= this.createdAt;
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /** The changes gathered since the last take. */
  take(): FeedChanges {
    this.lastTakeMs = Date.now();
    const taken = { changes: this.pending, through: this.through };
    this.pending = new Map();
    return taken;
  }

  /** Resolves at the next news (a batch, the end, a failure) or after `ms`. */
  wait(ms: number): Promise<void> {
    if (this.ended !== null || this.failure !== null) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.push(done);
    });
  }

  /** Waits until the source ended the watch at its fence (true), or the feed failed or `ms` passed. */
  async untilFenced(ms: number): Promise<boolean> {
    const until = Date.now() + ms;
    while (this.ended === null && this.failure === null && Date.now() < until) await this.wait(until - Date.now());
    return this.ended !== null;
  }

  close(why = 'closed'): void {
    if (this.failure === null && this.ended === null) this.failure = why;
    clearInterval(this.idleTimer);
    this.controller.abort();
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }

  private async run(startRevision: number): Promise<void> {
    let reason = 'no member of the source answered the watch';
    for (const endpoint of this.cell.endpoints) {
      // From where the feed stands: a watch on another member continues without a gap.
      const query = `key=${encodeURIComponent(this.prefix)}&prefix=true&startRevision=${Math.max(startRevision, this.through + 1)}&encoding=base64&progressMs=${progressMs}`;
      try {
        const response = await fetch(`${endpoint}/v1/watch?${query}`, { signal: this.controller.signal });
        if (response.status !== 200 || response.body === null) {
          reason = `watch at ${endpoint}: HTTP ${response.status}`;
          await response.body?.cancel();
          continue;
        }
        this.createdAt = Math.min(this.createdAt, Number(response.headers.get('baton-revision') ?? Number.POSITIVE_INFINITY));
        await this.read(response.body);
        if (this.ended !== null || this.failure !== null) return;
        reason = `the source's watch at ${endpoint} ended without the fence`;
      } catch (error) {
        if (this.controller.signal.aborted) return;
        reason = `watch at ${endpoint}: ${(error as Error).message}`;
      }
    }
    this.fail(reason);
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffered = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffered.indexOf('\n\n')) >= 0) {
        const message = buffered.slice(0, cut);
        buffered = buffered.slice(cut + 2);
        for (const line of message.split('\n')) if (line.startsWith('data:')) this.onBatch(JSON.parse(line.slice(5)) as WireBatch);
        if (this.ended !== null || this.failure !== null) {
          await reader.cancel().catch(() => {});
          return;
        }
      }
    }
  }

  private onBatch(batch: WireBatch): void {
    if (batch.error !== undefined) {
      if (batch.error.code === 'wrong_cell' && typeof batch.error.lastRevision === 'number') {
        this.through = Math.max(this.through, batch.error.lastRevision);
        this.ended = { fenceRevision: batch.error.lastRevision };
      } else {
        this.fail(`the source ended the watch: ${batch.error.code ?? 'error'} ${batch.error.message ?? ''}`);
      }
      this.wake();
      return;
    }
    for (const event of batch.events ?? []) {
      const key = Buffer.from(event.kv.key, 'base64').toString('utf8');
      this.pending.set(key, event.type === 'delete' ? null : {
        key, value: new Uint8Array(Buffer.from(event.kv.value, 'base64')),
        version: event.kv.version, createRevision: event.kv.createRevision, modRevision: event.kv.modRevision, lease: event.kv.lease,
      });
    }
    if (typeof batch.revision === 'number') this.through = Math.max(this.through, batch.revision);
    this.wake();
  }

  private fail(why: string): void {
    if (this.failure === null && this.ended === null) this.failure = why;
    clearInterval(this.idleTimer);
    this.wake();
  }
}

interface WireBatch {
  revision?: number;
  events?: { type: 'put' | 'delete'; kv: { key: string; value: string; version: number; createRevision: number; modRevision: number; lease: number } }[];
  error?: { code?: string; message?: string; lastRevision?: number };
}
