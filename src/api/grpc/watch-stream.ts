// etcd's Watch service: one bidirectional stream carries many watchers, each a watcher of the
// node's watch hub (src/watch) on one hub connection, so ordering, catch-up and bounds are the
// native API's. etcd's ranges that are not a prefix watch the covering prefix and filter here.
// Differences from the native API, chosen for etcd clients:
// - a watcher that falls behind (slow_consumer) is re-created from where it stopped, unseen by
//   the client: etcd never cancels slow watchers, it lets them catch up;
// - compaction cancels the watcher with etcd's compact_revision and message;
// - a stopping or leaderless node ends the stream UNAVAILABLE, so the client resumes elsewhere.
import { status } from '@grpc/grpc-js';
import type { MvccEvent } from '../../mvcc/index.js';
import type { Watcher, WatchConnection, WatchOutput } from '../../watch/index.js';
import type { WatchService } from '../stream/watch-service.js';
import type { WatchTag } from '../stream/types.js';
import { etcdMessages, toGrpcError } from './errors.js';
import type { HeaderSource } from './header.js';
import { etcdKey, rangePlan } from './keys.js';
import { kvMsg } from './kv-read.js';
import { int } from './wire.js';

export interface WatchCall {
  /** Who calls (src/api/principal.ts). */
  readonly principal: string;
  write(message: unknown): boolean;
  end(): void;
  emit(event: 'error', error: unknown): boolean;
  on(event: 'data', listener: (request: WatchRequestMsg) => void): unknown;
  on(event: 'end' | 'close' | 'drain' | 'cancelled', listener: () => void): unknown;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  once(event: 'drain', listener: () => void): unknown;
}

export interface WatchRequestMsg {
  request_union?: 'create_request' | 'cancel_request' | 'progress_request';
  create_request?: {
    key: Buffer;
    range_end: Buffer;
    start_revision: string;
    progress_notify: boolean;
    /** 0 = NOPUT, 1 = NODELETE. */
    filters: number[];
    prev_kv: boolean;
    watch_id: string;
  };
  cancel_request?: { watch_id: string };
  progress_request?: Record<string, never>;
}

interface Entry {
  watcher: Watcher<WatchTag>;
  readonly id: number;
  readonly filter: ((key: Buffer) => boolean) | null;
  readonly noPut: boolean;
  readonly noDelete: boolean;
  readonly prevKv: boolean;
  readonly progressNotify: boolean;
}

export function serveWatchStream(
  call: WatchCall,
  service: WatchService,
  headers: HeaderSource,
  logError: (error: unknown) => void,
): void {
  const { hub } = service;
  try {
    service.checkServing();
  } catch (error) {
    call.emit('error', toGrpcError(error, logError));
    return;
  }
  const entries = new Map<number, Entry>();
  let nextId = 0;
  let flushScheduled = false;
  let waitingForDrain = false;
  let ended = false;
  let progressWanted = false;
  const connection: WatchConnection<WatchTag> = hub.openConnection(() => schedule(), service.admitter(call.principal));
  const unregister = service.onStop(() => finish(status.UNAVAILABLE, 'etcdserver: server stopped: resume on another member'));

  call.on('data', (request) => {
    if (ended) return;
    try {
      if (request.create_request) create(request.create_request);
      else if (request.cancel_request) cancel(int(request.cancel_request.watch_id, 'watch_id'));
      else if (request.progress_request) {
        progressWanted = true;
        schedule();
      }
    } catch (error) {
      const grpcError = toGrpcError(error, logError);
      send({ header: headers.header(hub.revision), watch_id: '-1', created: true, canceled: true, cancel_reason: grpcError.details });
    }
  });
  call.on('end', () => finish(null, ''));
  call.on('cancelled', () => finish(null, ''));
  call.on('close', () => finish(null, ''));
  call.on('error', () => finish(null, ''));

  function create(request: NonNullable<WatchRequestMsg['create_request']>): void {
    const plan = rangePlan(request.key, request.range_end);
    // A cell with an ownership table refuses a watch of another cell's namespace (wrong_cell) or of
    // several cells' (cross_cell), as the native watches: never a silent watch of nothing. Only a
    // key or an exact prefix is judged: a filtered range watches a wider covering prefix here.
    if (plan.filter === null) service.checkOwned({ key: plan.key, prefix: plan.prefix });
    const startRevision = int(request.start_revision, 'start_revision');
    let id = int(request.watch_id, 'watch_id');
    if (id !== 0 && entries.has(id)) {
      send({ header: headers.header(hub.revision), watch_id: String(id), created: true, canceled: true, cancel_reason: 'etcdserver: duplicate watch ID' });
      return;
    }
    if (id === 0) {
      while (entries.has(nextId)) nextId++;
      id = nextId++;
    }
    const filters = request.filters ?? [];
    const noPut = filters.includes(0);
    const noDelete = filters.includes(1);
    const spec = {
      key: plan.key,
      prefix: plan.prefix,
      startRevision,
      prevKv: request.prev_kv === true,
      filter: noPut && !noDelete ? ('delete' as const) : noDelete && !noPut ? ('put' as const) : ('all' as const),
      encoding: 'grpc',
    };
    const watcher = hub.create(connection, { id, key: String(id) }, spec);
    entries.set(id, {
      watcher,
      id,
      filter: plan.filter,
      noPut,
      noDelete,
      prevKv: spec.prevKv,
      progressNotify: request.progress_notify === true,
    });
    // Before any event of this watcher: outputs leave on the next flush (setImmediate).
    send({ header: headers.header(watcher.startRevision - 1), watch_id: String(id), created: true });
  }

  function cancel(id: number): void {
    const entry = entries.get(id);
    if (entry === undefined) return;
    entries.delete(id);
    hub.cancel(entry.watcher);
    send({ header: headers.header(hub.revision), watch_id: String(id), canceled: true });
  }

  /** Writes one message; a full stream (write() false) pauses the flushes until it drains. */
  function send(message: unknown): void {
    if (ended) return;
    if (!call.write(message) && !waitingForDrain) {
      waitingForDrain = true;
      // Listening now, not at the next flush: a drain in between would otherwise be missed.
      call.once('drain', () => {
        waitingForDrain = false;
        schedule();
      });
    }
  }

  function schedule(): void {
    if (flushScheduled || ended) return;
    flushScheduled = true;
    setImmediate(flush);
  }

  function flush(): void {
    flushScheduled = false;
    if (ended || waitingForDrain) return; // the drain schedules the next flush
    for (let output = connection.next(); output !== null; output = connection.next()) {
      if (output.type === 'end') handleEnd(output);
      else {
        deliver(output.tag.id as number, output.batch);
        service.delivered(output.batch);
      }
      if (ended) return;
      if (waitingForDrain) return;
    }
    if (progressWanted && [...entries.values()].every((e) => e.watcher.state === 'synced' || e.watcher.state === 'waiting')) {
      // etcd's answer to a progress request: nothing at or below this revision is pending.
      progressWanted = false;
      send({ header: headers.header(hub.revision), watch_id: '-1' });
    }
  }

  function deliver(id: number, batch: { revision: number; events: readonly MvccEvent[] }): void {
    const entry = entries.get(id);
    if (entry === undefined) return; // canceled meanwhile
    const events = batch.events.filter(
      (event) =>
        !(event.type === 'put' ? entry.noPut : entry.noDelete) &&
        (entry.filter === null || entry.filter(etcdKey(event.kv.key))),
    );
    // An empty batch is a progress note: etcd sends those only to watchers that asked.
    if (events.length === 0 && (batch.events.length > 0 || !entry.progressNotify)) return;
    send({
      header: headers.header(batch.revision),
      watch_id: String(id),
      events: events.map((event) => ({
        type: event.type === 'put' ? 0 : 1, // PUT, DELETE
        kv:
          event.type === 'put'
            ? kvMsg(event.kv)
            : { key: etcdKey(event.kv.key), create_revision: '0', mod_revision: String(event.revision), version: '0', value: Buffer.alloc(0), lease: '0' },
        prev_kv: entry.prevKv && event.prevKv !== null ? kvMsg(event.prevKv) : null,
      })),
    });
  }

  function handleEnd(output: Extract<WatchOutput<WatchTag>, { type: 'end' }>): void {
    const id = output.tag.id as number;
    const entry = entries.get(id);
    if (entry === undefined || output.reason === 'canceled') return;
    if (output.reason === 'slow_consumer') {
      // Re-created from where it stopped: the client sees no gap and no duplicate. It starts by
      // catching up from history at the client's pace, so its tenant's buffered bytes (#28) do not
      // refuse it; a quota that still does (a slot taken meanwhile) cancels it saying why.
      const { spec } = entry.watcher;
      try {
        entry.watcher = hub.create(connection, output.tag, { ...spec, startRevision: output.lastRevision + 1 }, true);
      } catch (error) {
        entries.delete(id);
        send({ header: headers.header(hub.revision), watch_id: String(id), canceled: true, cancel_reason: toGrpcError(error, logError).details });
      }
      return;
    }
    if (output.reason === 'compacted') {
      entries.delete(id);
      const compactRevision = Number(output.error?.details['compactRevision'] ?? 0);
      send({
        header: headers.header(hub.revision),
        watch_id: String(id),
        canceled: true,
        compact_revision: String(compactRevision),
        cancel_reason: etcdMessages.compacted,
      });
      return;
    }
    if (output.reason === 'wrong_cell') {
      // Its namespace moved to another cell: this watch is canceled saying where and from which
      // revision to resume (docs/design/cells.md); the stream and its other watches go on.
      entries.delete(id);
      const details = output.error?.details ?? {};
      send({
        header: headers.header(hub.revision), watch_id: String(id), canceled: true,
        cancel_reason: `baton: wrong_cell: namespace ${String(details['namespace'])} moved to cell ${String(details['cell'])}; resume there from revision ${output.lastRevision + 1}`,
      });
      return;
    }
    if (output.reason === 'permission_denied') {
      // As etcd: this watch is canceled with the reason; the stream and its other watches go on.
      entries.delete(id);
      send({ header: headers.header(hub.revision), watch_id: String(id), canceled: true, cancel_reason: 'etcdserver: permission denied' });
      return;
    }
    finish(status.UNAVAILABLE, output.reason === 'stopped' ? 'etcdserver: server stopped: resume on another member' : 'etcdserver: no leader');
  }

  function finish(code: status | null, details: string): void {
    if (ended) return;
    ended = true;
    unregister();
    entries.clear();
    connection.close();
    if (code === null) call.end();
    else call.emit('error', { code, details, message: details });
  }
}
