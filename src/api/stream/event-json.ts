// Watch batches as JSON text (api.md Watches). A batch object is shared by every watcher of one
// group (same key, filter, prevKv and encoding), so its text is cached on the object: 10,000
// watchers of one key cost one JSON.stringify per applied chunk. Events are cached too, per
// variant, for the watchers whose batches differ but overlap (a key watcher and a prefix one).
import type { KeyValue, MvccEvent } from '../../mvcc/index.js';
import type { WatchBatch } from '../../watch/index.js';

import { kvJson, type WireEncoding } from '../json.js';

export { kvJson, type WireEncoding };

export interface BatchVariant {
  readonly encoding: WireEncoding;
  readonly prevKv: boolean;
}

const eventCaches = {
  utf8: new WeakMap<MvccEvent, string>(),
  utf8Prev: new WeakMap<MvccEvent, string>(),
  base64: new WeakMap<MvccEvent, string>(),
  base64Prev: new WeakMap<MvccEvent, string>(),
};
const batchCache = new WeakMap<WatchBatch, string>();
const sseCache = new WeakMap<WatchBatch, Buffer>();

function eventText(event: MvccEvent, variant: BatchVariant): string {
  const cache = eventCaches[`${variant.encoding}${variant.prevKv ? 'Prev' : ''}` as keyof typeof eventCaches];
  let text = cache.get(event);
  if (text === undefined) {
    const json: Record<string, unknown> = { type: event.type, kv: kvJson(event.kv, variant.encoding) };
    if (variant.prevKv && event.prevKv !== null) json['prevKv'] = kvJson(event.prevKv, variant.encoding);
    text = JSON.stringify(json);
    cache.set(event, text);
  }
  return text;
}

/** `{"revision":R,"events":[...]}`, computed once per batch object. */
export function batchJson(batch: WatchBatch, variant: BatchVariant): string {
  let text = batchCache.get(batch);
  if (text === undefined) {
    const events = batch.events.map((event) => eventText(event, variant));
    text = `{"revision":${batch.revision},"events":[${events.join(',')}]}`;
    batchCache.set(batch, text);
  }
  return text;
}

/** One Server-Sent Events message carrying the batch, as bytes shared by every SSE watcher. */
export function batchSse(batch: WatchBatch, variant: BatchVariant): Buffer {
  let bytes = sseCache.get(batch);
  if (bytes === undefined) {
    bytes = Buffer.from(`data: ${batchJson(batch, variant)}\n\n`, 'utf8');
    sseCache.set(batch, bytes);
  }
  return bytes;
}

/** An SSE message for anything else (errors, the announced start). */
export function sseMessage(body: unknown): Buffer {
  return Buffer.from(`data: ${JSON.stringify(body)}\n\n`, 'utf8');
}
