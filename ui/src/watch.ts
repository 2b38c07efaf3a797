// Live feeds over the API's SSE watch (GET /v1/watch), read through fetch (EventSource cannot
// send the Authorization header). The console keeps one per thing it shows: the key browser's
// prefix, /locks/ and /elections/, so a user allowed to read only part of the key space still
// gets live updates where allowed (and sees the refusal where not). A feed resumes from the last
// revision it saw after a break; it starts after the revision its view was read at (no event lost
// in between), and after compaction it reloads the view and starts again.
import { ApiError, authHeaders, describe, errorOf, type WatchEvent } from './api.js';

export interface FeedHandlers {
  events(revision: number, events: readonly WatchEvent[]): void;
  /**
   * The feed (re)starts: the view reloads what it shows and says the revision it read at, from
   * which the feed continues with no gap (null: start from now).
   */
  reset(): Promise<number | null>;
  state(text: string, ok: boolean): void;
}

const retryMs = 1000;
/** A refusal will not change by itself soon: ask again seldom (the user may sign in meanwhile). */
const refusedRetryMs = 15_000;

export class Feed {
  private readonly abort = new AbortController();
  private next = 0;

  constructor(private readonly prefix: string, private readonly handlers: FeedHandlers) {
    void this.run();
  }

  stop(): void {
    this.abort.abort();
  }

  private async run(): Promise<void> {
    while (!this.abort.signal.aborted) {
      try {
        if (this.next === 0) {
          const revision = await this.handlers.reset();
          if (revision !== null) this.next = revision + 1;
        }
        await this.read();
        this.handlers.state('ended; resuming', false);
      } catch (error) {
        if (this.abort.signal.aborted) return;
        const text = describe(error);
        if (text.includes('compacted')) this.next = 0;
        this.handlers.state(text, false);
        if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
          await new Promise((resolve) => setTimeout(resolve, refusedRetryMs));
          continue;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }

  private async read(): Promise<void> {
    const start = this.next > 0 ? `&startRevision=${this.next}` : '';
    const response = await fetch(`/v1/watch?key=${encodeURIComponent(this.prefix)}&prefix=true&progressMs=10000${start}`, {
      headers: authHeaders(),
      credentials: 'same-origin',
      signal: this.abort.signal,
    });
    if (!response.ok || response.body === null) throw await errorOf(response);
    this.handlers.state('live', true);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const message = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = message.split('\n').filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trimStart()).join('\n');
        if (data === '') continue;
        const batch = JSON.parse(data) as { revision?: number; events?: WatchEvent[]; error?: { code: string; message: string } };
        if (batch.error !== undefined) throw new Error(`${batch.error.code}: ${batch.error.message}`);
        if (typeof batch.revision !== 'number') continue;
        this.next = batch.revision + 1;
        if (batch.events !== undefined && batch.events.length > 0) this.handlers.events(batch.revision, batch.events);
      }
    }
  }
}
