// A move's change feed from the source cell (docs/design/cells.md, "Moving a namespace"): one
// watch of the namespace on a source member, from the revision after the copy, streamed while the
// move catches up, so the changes left after the fence are the few of its last moments rather than
// a full read of the namespace. The source ends the watch with wrong_cell once it applies the
// fence, after every event of the namespace up to the fence: that end is the mover's proof that
// it holds every change the source ever accepted for the namespace (lastRevision: the fence).
// Any other end (compacted, unavailable, a dropped connection) marks the feed failed: the mover
// then falls back to reading the whole namespace.
import { FeedState, type FeedEvent } from './feed-state.js';
import type { MapCell } from './cell-map.js';

export type { FeedChanges } from './feed-state.js';

/** How often the source says how far the watch got while nothing changes (a live feed's pulse). */
const progressMs = 100;
/** A feed nobody takes from (its move finished elsewhere, its leader stepped down) closes. */
const idleCloseMs = 30_000;

const wallClock = { nowMs: () => Date.now(), after: (ms: number, run: () => void) => void setTimeout(run, ms) };

export class SourceFeed extends FeedState {
  private readonly controller = new AbortController();
  private lastTakeMs = Date.now();
  private readonly idleTimer: NodeJS.Timeout;

  constructor(private readonly cell: MapCell, private readonly prefix: string, startRevision: number) {
    super(startRevision, wallClock);
    this.idleTimer = setInterval(() => {
      if (Date.now() - this.lastTakeMs > idleCloseMs) this.close('idle');
    }, 5_000);
    this.idleTimer.unref();
    void this.run(startRevision);
  }

  override take(): ReturnType<FeedState['take']> {
    this.lastTakeMs = Date.now();
    return super.take();
  }

  override close(why = 'closed'): void {
    super.close(why);
    this.controller.abort();
  }

  protected override fail(why: string): void {
    clearInterval(this.idleTimer);
    super.fail(why);
  }

  private async run(startRevision: number): Promise<void> {
    let reason = 'no member of the source answered the watch';
    for (const endpoint of this.cell.endpoints) {
      // From where the feed stands: a watch on another member continues without a gap.
      const query = `key=${encodeURIComponent(this.prefix)}&prefix=true&startRevision=${Math.max(startRevision, this.nextRevision)}&encoding=base64&progressMs=${progressMs}`;
      try {
        const response = await fetch(`${endpoint}/v1/watch?${query}`, { signal: this.controller.signal });
        if (response.status !== 200 || response.body === null) {
          reason = `watch at ${endpoint}: HTTP ${response.status}`;
          await response.body?.cancel();
          continue;
        }
        this.opened(Number(response.headers.get('baton-revision') ?? Number.POSITIVE_INFINITY));
        await this.read(response.body);
        if (this.over) return;
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
        if (this.over) {
          await reader.cancel().catch(() => {});
          return;
        }
      }
    }
  }

  private onBatch(batch: WireBatch): void {
    if (batch.error !== undefined) {
      if (batch.error.code === 'wrong_cell' && typeof batch.error.lastRevision === 'number') this.endedAt(batch.error.lastRevision);
      else this.fail(`the source ended the watch: ${batch.error.code ?? 'error'} ${batch.error.message ?? ''}`);
      return;
    }
    const events: FeedEvent[] = (batch.events ?? []).map((event) => {
      const key = Buffer.from(event.kv.key, 'base64').toString('utf8');
      return {
        type: event.type,
        kv: {
          key, value: new Uint8Array(Buffer.from(event.kv.value, 'base64')),
          version: event.kv.version, createRevision: event.kv.createRevision, modRevision: event.kv.modRevision, lease: event.kv.lease,
        },
      };
    });
    this.batch(events, typeof batch.revision === 'number' ? batch.revision : -1);
  }
}

interface WireBatch {
  revision?: number;
  events?: { type: 'put' | 'delete'; kv: { key: string; value: string; version: number; createRevision: number; modRevision: number; lease: number } }[];
  error?: { code?: string; message?: string; lastRevision?: number };
}
