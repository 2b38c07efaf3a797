// The console's one live feed: the API's SSE watch (GET /v1/watch) over every key, read through
// fetch (EventSource cannot send the Authorization header). It resumes from the last revision it
// saw after a break, and starts again from "now" (telling the views to reload) after compaction.
import { authHeaders, describe, errorOf, type WatchEvent } from './api.js';

export interface WatchHandlers {
  events(revision: number, events: readonly WatchEvent[]): void;
  /** The feed (re)started from now: views reload what they show. */
  reset(): void;
  state(text: string, ok: boolean): void;
}

const retryMs = 1000;

export function watchEverything(handlers: WatchHandlers): void {
  let next = 0;
  const run = async (): Promise<void> => {
    for (;;) {
      try {
        const resumed = next > 0;
        if (!resumed) handlers.reset();
        await readStream(next, handlers, (revision) => (next = revision + 1));
        handlers.state('watch ended; resuming', false);
      } catch (error) {
        const text = describe(error);
        if (text.includes('compacted')) next = 0;
        handlers.state(`watch: ${text}`, false);
      }
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  };
  void run();
}

async function readStream(startRevision: number, handlers: WatchHandlers, seen: (revision: number) => void): Promise<void> {
  const query = `key=${encodeURIComponent('/')}&prefix=true&progressMs=10000${startRevision > 0 ? `&startRevision=${startRevision}` : ''}`;
  const response = await fetch(`/v1/watch?${query}`, { headers: authHeaders(), credentials: 'same-origin' });
  if (!response.ok || response.body === null) throw await errorOf(response);
  handlers.state('live', true);
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
      if (typeof batch.revision === 'number') {
        seen(batch.revision);
        if (batch.events !== undefined && batch.events.length > 0) handlers.events(batch.revision, batch.events);
      }
    }
  }
}
