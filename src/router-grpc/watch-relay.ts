// etcd's Watch stream through the router (docs/design/cells.md, "The router's gRPC relay"). One
// client stream may watch keys of several cells: the router opens at most one upstream Watch
// stream per cell and sends each create to the cell owning its range. Watch ids are the router's:
// it gives each create an explicit `watch_id` unique on the client stream (the client's own when
// it chose one), so every answer from any cell already carries the id the client knows and passes
// through as bytes. A range over namespaces of several cells is refused (created and canceled, as
// the facade refuses a bad create) and sent nowhere.
import { status, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { UnavailableError } from '../base/errors.js';
import { toGrpcError } from '../api/grpc/errors.js';
import type { CallStatus, GrpcCall } from '../api/grpc/h2/grpc-call.js';
import type { RoutedCell, Router } from '../router/router.js';
import { forwardMetadata, type CellChannels } from './cell-channels.js';
import { rangeSpan } from './grpc-route-keys.js';
import { passedOn } from './unary-relay.js';

interface WatchCreate {
  key?: Buffer;
  range_end?: Buffer;
  watch_id?: string;
}
interface WatchRequestMessage {
  create_request?: WatchCreate;
  cancel_request?: { watch_id?: string };
  progress_request?: Record<string, never>;
}
interface WatchResponseMessage {
  watch_id?: string;
  created?: boolean;
  canceled?: boolean;
}

/** The Watch method's codecs (proto-loader's, from src/api/grpc/proto.ts). */
export interface WatchCodec {
  decodeRequest(bytes: Buffer): unknown;
  encodeRequest(message: unknown): Buffer;
  decodeResponse(bytes: Buffer): unknown;
  encodeResponse(message: unknown): Buffer;
}

export interface WatchRelayDeps {
  readonly router: Router;
  readonly channels: CellChannels;
  readonly codec: WatchCodec;
  readonly logError: (error: unknown) => void;
}

const watchPath = '/etcdserverpb.Watch/Watch';

type Upstream = ClientDuplexStream<Buffer, Buffer>;

export function serveWatchRelay(call: GrpcCall, deps: WatchRelayDeps): void {
  const { router, channels, codec } = deps;
  /** One Watch stream per cell, opened by the first create for that cell. */
  const upstreams = new Map<string, Upstream>();
  /** Open (or being created) watch id -> the cell holding it. Invariant: its cell is in `upstreams`. */
  const watchCells = new Map<number, string>();
  /**
   * Per cell, the ids of creates sent and not yet answered, in order: a cell answers its creates in
   * order, and a refused one (created + canceled) may carry id -1, so the queue names it.
   */
  const creating = new Map<string, number[]>();
  let nextId = 0;
  let done = false;
  /** Requests are handled one at a time, in order: a create waits for its route before the next. */
  let chain: Promise<void> = Promise.resolve();

  const finish = (callStatus: CallStatus | null): void => {
    if (done) return;
    done = true;
    for (const upstream of upstreams.values()) upstream.cancel();
    upstreams.clear();
    if (callStatus === null) call.end();
    else call.emit('error', callStatus);
  };

  call.on('data', (bytes) => {
    chain = chain.then(() => handle(bytes as Buffer)).catch((error: unknown) => finish(toGrpcError(error, deps.logError)));
  });
  // As the facade: a client that ends its side ends the stream (after what it sent was handled).
  call.on('end', () => void chain.then(() => finish(null)));
  call.on('cancelled', () => finish({ code: status.CANCELLED, details: 'cancelled' }));
  call.on('drain', () => {
    for (const upstream of upstreams.values()) upstream.resume();
  });

  async function handle(bytes: Buffer): Promise<void> {
    if (done) return;
    let request: WatchRequestMessage;
    try {
      request = codec.decodeRequest(bytes) as WatchRequestMessage;
    } catch (error) {
      return finish({ code: status.INTERNAL, details: `Error deserializing request: ${(error as Error).message}` });
    }
    if (request.create_request) return create(request.create_request);
    if (request.cancel_request) {
      const cell = watchCells.get(Number(request.cancel_request.watch_id ?? '0'));
      // A cancel of no open watch is dropped, as etcd drops it.
      if (cell !== undefined) upstreams.get(cell)?.write(bytes);
      return;
    }
    if (request.progress_request) {
      // Each cell answers for its own watches (revisions are per cell); with none open, the root's.
      if (upstreams.size === 0) open(await router.cellGrpc(undefined));
      for (const upstream of upstreams.values()) upstream.write(bytes);
    }
  }

  async function create(request: WatchCreate): Promise<void> {
    let id = Number(request.watch_id ?? '0');
    if (id !== 0 && watchCells.has(id)) return refuse(String(id), 'etcdserver: duplicate watch ID');
    if (id === 0) {
      while (watchCells.has(nextId)) nextId++;
      id = nextId++;
    }
    let target: RoutedCell;
    try {
      target = await targetOf(request);
    } catch (error) {
      return refuse('-1', toGrpcError(error, deps.logError).details);
    }
    if (done) return;
    const upstream = open(target);
    watchCells.set(id, target.cell);
    creating.get(target.cell)?.push(id);
    upstream.write(codec.encodeRequest({ create_request: { ...request, watch_id: String(id) } }));
  }

  /** The owner of the watched range; a range the facade cannot read goes to the root's cell, which refuses it. */
  async function targetOf(request: WatchCreate): Promise<RoutedCell> {
    let span;
    try {
      span = rangeSpan(request);
    } catch {
      return router.cellGrpc(undefined);
    }
    return router.routeGrpc([span]);
  }

  function refuse(watchId: string, reason: string): void {
    call.write(codec.encodeResponse({ header: {}, watch_id: watchId, created: true, canceled: true, cancel_reason: reason }));
  }

  function open(target: RoutedCell): Upstream {
    const known = upstreams.get(target.cell);
    if (known !== undefined) return known;
    const url = target.grpcEndpoints[0];
    if (url === undefined) throw new UnavailableError(`router: no etcd gRPC endpoint known for cell ${target.cell} (start its members with --listen-grpc)`);
    // The stream's response metadata names the cell of its first watch.
    if (call.responseFields === null) call.responseFields = [['baton-cell', target.cell], ['baton-routing-epoch', String(target.epoch)]];
    const upstream = channels.bidi(url, watchPath, forwardMetadata(call.requestHeaders), call.getDeadline());
    router.metrics.forwarded(target.cell);
    upstreams.set(target.cell, upstream);
    creating.set(target.cell, []);
    upstream.on('data', (bytes: Buffer) => {
      if (done) return;
      forget(bytes, target.cell);
      if (!call.write(bytes)) upstream.pause();
    });
    // A cell's stream that fails or ends ends the client's: etcd clients resume every watch from
    // its last revision on a new stream (the router's own stream has no partial failure).
    upstream.on('error', (error: ServiceError) => finish(passedOn(error)));
    upstream.on('end', () => finish({ code: status.UNAVAILABLE, details: `router: the watch stream of cell ${target.cell} ended: resume` }));
    return upstream;
  }

  /** A watch the cell canceled (or refused to create: wrong_cell, a bad range) no longer holds its id. */
  function forget(bytes: Buffer, cell: string): void {
    let answer: WatchResponseMessage;
    try {
      answer = codec.decodeResponse(bytes) as WatchResponseMessage;
    } catch {
      return;
    }
    const created = answer.created === true ? creating.get(cell)?.shift() : undefined;
    const id = created ?? Number(answer.watch_id ?? '-1');
    if (answer.canceled === true && watchCells.get(id) === cell) watchCells.delete(id);
  }
}
