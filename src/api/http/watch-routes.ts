// GET /v1/watch: a watch as a Server-Sent Events stream (api.md Watches). Each `data:` line is one
// JSON batch {"revision","events"}; a watch from "now" (no startRevision) first gets a progress
// batch naming the revision it starts after; an end ({"error": ...}: compacted, slow_consumer,
// unavailable when the node stops) is the last line, then the stream closes. Writes follow the
// socket's pace: while it is full the watcher's bounded queue absorbs the difference, and a
// watcher that overflows it ends with slow_consumer rather than grow memory.
import type { ServerResponse } from 'node:http';
import { batchSse, sseMessage, type WireEncoding } from '../stream/event-json.js';
import { watchEndError, watchRequest } from '../stream/watch-request.js';
import type { WatchService } from '../stream/watch-service.js';
import { defaultStreamLimits, type WatchTag } from '../stream/types.js';
import type { WatchConnection, WatchOutput } from '../../watch/index.js';
import type { RouteGroup, RouteRequest } from './handler.js';
import { validKey } from './parse.js';

const sseTag: WatchTag = { id: null, key: '' };

export function createWatchRoutes(service: WatchService): RouteGroup {
  return async (request) => {
    if (request.url.pathname !== '/v1/watch' || request.method !== 'GET') return false;
    serveWatch(service, request);
    return true;
  };
}

function serveWatch(service: WatchService, request: RouteRequest): void {
  const { query, res, context } = request;
  const key = validKey(query.string('key'), request.limits);
  const filter = query.oneOf<'put' | 'delete' | 'all'>('filter', ['put', 'delete', 'all'], 'all');
  const { spec, progressMs } = watchRequest(
    {
      key,
      prefix: query.flag('prefix'),
      startRevision: query.integer('startRevision', 0) ?? 0,
      prevKv: query.flag('prevKv'),
      filter: filter === 'all' ? undefined : filter,
      progressMs: query.integer('progressMs', 0) ?? 0,
      encoding: query.oneOf<WireEncoding>('encoding', ['utf8', 'base64'], 'utf8'),
    },
    service.options,
  );
  query.rejectUnknown();
  service.checkServing();
  service.checkOwned(spec);
  const { hub } = service;
  let flushScheduled = false;
  let waitingForDrain = false;
  let ended = false;
  const connection: WatchConnection<WatchTag> = hub.openConnection(() => schedule(), service.admitter(request.principal));
  let watcher;
  try {
    watcher = hub.create(connection, sseTag, spec);
  } catch (error) {
    connection.close();
    throw error; // quota: answered 429 by the handler, headers not sent yet
  }
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
    'baton-revision': String(hub.revision),
    'baton-cell': context.cellId,
  });
  if (spec.startRevision === 0) res.write(sseMessage({ revision: watcher.startRevision - 1, events: [] }));
  // A watch that resumes from a revision writes nothing until an event or a progress batch: send
  // the headers now, so the client knows at once that its watch exists (the console's live state).
  else res.flushHeaders();
  const timer = progressMs > 0 ? setInterval(() => hub.progress(watcher), progressMs) : null;
  const unregister = service.onStop(() => {
    // The hub dropped every queue when it stopped: what is left is the watcher's end.
    const output = connection.next();
    finish(output?.type === 'end' ? output : null);
  });

  function schedule(): void {
    if (flushScheduled || waitingForDrain || ended) return;
    flushScheduled = true;
    setImmediate(flush);
  }

  function flush(): void {
    flushScheduled = false;
    if (ended) return;
    for (let output = connection.next(); output !== null; output = connection.next()) {
      if (output.type === 'end') return finish(output);
      res.write(batchSse(output.batch, spec));
      service.delivered(output.batch);
      // The socket's own buffer may hold up to the high-water mark (more per drain than Node's
      // 16 KiB default); past it the watcher's bounded queue takes over.
      if (res.writableLength >= defaultStreamLimits.socketBufferedBytesHigh) {
        waitingForDrain = true;
        res.once('drain', () => {
          waitingForDrain = false;
          schedule();
        });
        return;
      }
    }
  }

  function finish(output: Extract<WatchOutput<WatchTag>, { type: 'end' }> | null): void {
    if (ended) return;
    ended = true;
    cleanup();
    if (output !== null && output.reason !== 'canceled') {
      const error = output.error;
      const body = watchEndError(output.reason, error?.details ?? {}, error?.message ?? '', output.lastRevision);
      res.write(sseMessage({ error: body }));
    }
    res.end();
    endWithGrace(res, service.options.endGraceMs);
  }

  function cleanup(): void {
    if (timer !== null) clearInterval(timer);
    unregister();
    connection.close();
  }

  // The client went away: nothing more to send.
  res.once('close', () => {
    if (ended) return;
    ended = true;
    cleanup();
  });
}

/** A client that stopped reading may never take the last bytes: do not keep its socket forever. */
function endWithGrace(res: ServerResponse, graceMs: number): void {
  if (res.writableFinished) return;
  const timer = setTimeout(() => res.destroy(), graceMs);
  timer.unref();
  res.once('close', () => clearTimeout(timer));
}
