// One etcd gRPC call relayed to the cell that owns its keys (docs/design/cells.md, "The router's
// gRPC relay"): unary calls with the stale-routing retry, server streams (Observe, Snapshot) and
// the LeaseKeepAlive stream. Messages pass as bytes; the answer carries Baton-Cell and
// Baton-Routing-Epoch as response metadata.
import { status, type ClientReadableStream, type Metadata, type ServiceError } from '@grpc/grpc-js';
import { UnavailableError } from '../base/errors.js';
import { toGrpcError, wrongCellTrailer } from '../api/grpc/errors.js';
import type { AnswerCallback, CallStatus, GrpcCall } from '../api/grpc/h2/grpc-call.js';
import type { RoutedCell, Router } from '../router/router.js';
import { forwardMetadata, metadataValue, neverArrived, type CellChannels } from './cell-channels.js';
import { grpcRoute, leaseSpan, type GrpcRoute } from './grpc-route-keys.js';

/** What the relay needs of one etcd method: its path and its request decoder (proto-loader's). */
export interface RelayedMethod {
  readonly path: string;
  readonly decode: (bytes: Buffer) => unknown;
}

export class UnaryRelay {
  constructor(
    private readonly router: Router,
    private readonly channels: CellChannels,
    private readonly logError: (error: unknown) => void,
    /** The router's own answer to a call routed to it (MemberList). */
    private readonly ownAnswer: (path: string) => Buffer,
  ) {}

  /** The route of a call from its message and metadata; a message that does not decode goes to the root's cell. */
  routeOf(method: RelayedMethod, request: Buffer, call: GrpcCall): GrpcRoute {
    let decoded: unknown;
    try {
      decoded = method.decode(request);
    } catch {
      return { kind: 'cell' }; // the cell refuses it as the facade refuses it
    }
    return grpcRoute(method.path, decoded, metadataValue(call.requestHeaders, 'baton-cell'));
  }

  /** The cell a route names now (the cache, corrections included). */
  target(route: Exclude<GrpcRoute, { kind: 'router' }>, call: GrpcCall): Promise<RoutedCell> {
    if (route.kind === 'keys') return this.router.routeGrpc(route.spans);
    if (route.kind === 'lease') return this.router.routeGrpc([leaseSpan(metadataValue(call.requestHeaders, 'baton-namespace'))]);
    return this.router.cellGrpc(metadataValue(call.requestHeaders, 'baton-cell'));
  }

  unary(method: RelayedMethod, call: GrpcCall, callback: AnswerCallback): void {
    const request = call.request as Buffer;
    const route = this.routeOf(method, request, call);
    if (route.kind === 'router') return callback(null, this.ownAnswer(method.path));
    this.relayUnary(route, method.path, request, call).then(
      (value) => callback(null, value),
      (error: unknown) => {
        if (call.responseFields === null) call.responseFields = [['baton-routing-epoch', String(this.router.cache.cellMap.epoch)]];
        callback(isServiceError(error) ? passedOn(error) : toGrpcError(error, this.logError));
      },
    );
  }

  /** To the owner; on wrong_cell the cache takes the owner the cell named and the call goes there once, at once. */
  private async relayUnary(route: Exclude<GrpcRoute, { kind: 'router' }>, path: string, request: Buffer, call: GrpcCall): Promise<Buffer> {
    let target = await this.target(route, call);
    for (let attempt = 0; ; attempt++) {
      call.responseFields = answerFields(target);
      try {
        return await this.sendUnary(target, path, request, call);
      } catch (error) {
        const details = isServiceError(error) ? wrongCellDetails(error) : null;
        if (details === null) throw error;
        this.router.metrics.wrongCell(target.cell);
        if (attempt > 0 || route.kind !== 'keys' || !this.router.correct(details)) throw error;
        target = await this.router.routeGrpc(route.spans);
      }
    }
  }

  /** The cell's leader first, then its other members, only while the call never arrived. */
  private async sendUnary(target: RoutedCell, path: string, request: Buffer, call: GrpcCall): Promise<Buffer> {
    const metadata = forwardMetadata(call.requestHeaders);
    let last: unknown = null;
    for (const url of endpointsOf(target)) {
      this.router.metrics.forwarded(target.cell);
      try {
        return await this.channels.unary(url, path, request, metadata, call.getDeadline(), call);
      } catch (error) {
        if (!neverArrived(error)) throw error;
        last = error;
      }
    }
    throw new UnavailableError(`router: no member of cell ${target.cell} answered: ${(last as ServiceError)?.details ?? ''}`, { cell: target.cell });
  }

  /** A server stream (Observe, Snapshot) or LeaseKeepAlive, relayed to one member of the owner. */
  stream(method: RelayedMethod, call: GrpcCall, kind: 'serverStream' | 'bidi'): void {
    // Client messages that arrive while the route is looked up wait here, in order.
    const waiting: Buffer[] = [];
    let ended = false;
    let upstream: ReturnType<CellChannels['bidi']> | ClientReadableStream<Buffer> | null = null;
    if (kind === 'bidi') {
      call.on('data', (message) => (upstream === null ? waiting.push(message as Buffer) : (upstream as ReturnType<CellChannels['bidi']>).write(message)));
      call.on('end', () => {
        ended = true;
        if (upstream !== null) (upstream as ReturnType<CellChannels['bidi']>).end();
      });
    }
    call.on('cancelled', () => upstream?.cancel());
    const route: GrpcRoute = kind === 'bidi' ? { kind: 'lease' } : this.routeOf(method, call.request as Buffer, call);
    if (route.kind === 'router') return void call.emit('error', { code: status.UNIMPLEMENTED, details: `router: ${method.path} is not a stream` });
    // .catch after .then: a failure while opening (no endpoint known) ends the call too.
    this.target(route, call).then(
      (target) => {
        if (call.ended) return;
        const url = endpointsOf(target)[0] as string;
        const metadata: Metadata = forwardMetadata(call.requestHeaders);
        call.responseFields = answerFields(target);
        this.router.metrics.forwarded(target.cell);
        if (kind === 'serverStream') {
          upstream = this.channels.serverStream(url, method.path, call.request as Buffer, metadata, call.getDeadline());
        } else {
          const duplex = this.channels.bidi(url, method.path, metadata, call.getDeadline());
          upstream = duplex;
          for (const message of waiting.splice(0)) duplex.write(message);
          if (ended) duplex.end();
        }
        pipeAnswers(upstream, call);
      },
    ).catch((error: unknown) => void call.emit('error', toGrpcError(error, this.logError)));
  }
}

/** Answers from the cell to the client, with backpressure: a client that does not read pauses the cell's stream. */
export function pipeAnswers(upstream: ClientReadableStream<Buffer>, call: GrpcCall): void {
  upstream.on('data', (message: Buffer) => {
    if (!call.write(message)) upstream.pause();
  });
  call.on('drain', () => upstream.resume());
  upstream.on('end', () => call.end());
  upstream.on('error', (error: ServiceError) => void call.emit('error', passedOn(error)));
}

function endpointsOf(target: RoutedCell): readonly string[] {
  if (target.grpcEndpoints.length === 0) {
    throw new UnavailableError(`router: no etcd gRPC endpoint known for cell ${target.cell} (start its members with --listen-grpc)`, { cell: target.cell });
  }
  return target.grpcEndpoints;
}

function answerFields(target: RoutedCell): [string, string][] {
  return [['baton-cell', target.cell], ['baton-routing-epoch', String(target.epoch)]];
}

function isServiceError(error: unknown): error is ServiceError {
  return typeof (error as ServiceError)?.code === 'number' && typeof (error as ServiceError)?.details === 'string' && (error as ServiceError).metadata !== undefined;
}

/** wrong_cell's details from the cell's trailer, or null for any other answer. */
function wrongCellDetails(error: ServiceError): Record<string, unknown> | null {
  const value = error.metadata.get(wrongCellTrailer)[0];
  if (value === undefined) return null;
  try {
    const details = JSON.parse(Buffer.from(value as Buffer).toString('utf8')) as unknown;
    return typeof details === 'object' && details !== null ? (details as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The cell's status as the client gets it: code, message, Retry-After and wrong_cell's details. */
export function passedOn(error: ServiceError): CallStatus {
  const trailers: [string, string][] = [];
  const wrongCell = error.metadata?.get(wrongCellTrailer)[0];
  if (wrongCell !== undefined) trailers.push([wrongCellTrailer, Buffer.from(wrongCell as Buffer).toString('base64')]);
  const retryAfter = Number(error.metadata?.get('retry-after')[0]);
  return {
    code: error.code,
    details: error.details,
    ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterSeconds: retryAfter } : {}),
    ...(trailers.length > 0 ? { trailers } : {}),
  };
}
