// etcd's v3 JSON gateway (grpc-gateway on etcd's client port) on the facade's port: each POST
// /v3/... (and /v3beta/...) runs the gRPC handler of its RPC (routes.ts), with the request and
// answer in etcd's JSON (json-codec.ts); streams answer one {"result": ...} line per message.
// Also etcd's GET /version and /health, /livez and /readyz (with etcd's checks, src/api/health.ts),
// and /metrics.
import { principalOfSocket } from '../principal.js';
import { status } from '@grpc/grpc-js';
import type { CallRoute } from '../grpc/h2/grpc-call.js';
import { reportedEtcdVersion } from '../grpc/cluster-service.js';
import { GatewayInputError, httpStatusOf, unaryErrorBody } from './errors.js';
import { GatewayCall, gatewayHeaders, type GatewayRequest, type GatewayResponse } from './gateway-call.js';
import { JsonObjectStream, parseBody } from './json-stream.js';
import { gatewayRoutes, type GatewayRoute } from './routes.js';
import { healthTarget, runHealth, type HealthChecks, type HealthKind } from '../health.js';

export interface GatewayDeps {
  /** The facade's gRPC route for a method path (/etcdserverpb.KV/Range), if it serves it. */
  grpcRoute(path: string): CallRoute | undefined;
  readonly node: { healthy(): boolean; ready(): { ready: boolean; reason: string }; metricsText(): Promise<string> };
  /** etcd's /livez and /readyz checks (src/api/health.ts); without them, plain `ok` answers. */
  readonly health?: HealthChecks;
  /** A JSON request (or one streamed request object) larger than this is refused. */
  readonly bodyBytesMax: number;
  readonly logError: (error: unknown) => void;
}

/** etcd's Watch server keeps a stream open after the client half-closes (grpc-gateway's CloseSend). */
const keepsOpenAfterRequestEnd = new Set(['/etcdserverpb.Watch/Watch']);

export function createGatewayHandler(deps: GatewayDeps): (req: GatewayRequest, res: GatewayResponse) => void {
  const routes = gatewayRoutes();
  const cluster = reportedEtcdVersion.replace(/^(\d+\.\d+)\..*$/, '$1.0');
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    const route = routes.get(path);
    if (route !== undefined) {
      if (req.method !== 'POST') return text(res, 405, 'Method Not Allowed\n');
      return serveRpc(req, res, route, deps);
    }
    const healthCall = deps.health === undefined ? null : healthTarget(deps.health, path);
    if (healthCall !== null && deps.health !== undefined) {
      if (req.method !== 'GET') return text(res, 405, 'Method Not Allowed\n');
      return serveHealth(res, deps.health, healthCall, req.url ?? '/', deps.logError);
    }
    if (req.method !== 'GET') return text(res, path in plainPaths ? 405 : 404, path in plainPaths ? 'Method Not Allowed\n' : 'Not Found\n');
    switch (path) {
      case '/version':
        return json(res, 200, { etcdserver: reportedEtcdVersion, etcdcluster: cluster });
      case '/health': {
        const healthy = deps.node.healthy();
        // etcd writes this JSON without a content type: Go's sniffing makes it text/plain.
        return text(res, healthy ? 200 : 503, JSON.stringify({ health: String(healthy) }));
      }
      case '/livez':
        return text(res, 200, 'ok');
      case '/readyz': {
        const ready = deps.node.ready();
        return text(res, ready.ready ? 200 : 503, ready.ready ? 'ok' : `not ready: ${ready.reason}`);
      }
      case '/metrics':
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
        return void deps.node.metricsText().then((body) => res.end(body), (error: unknown) => { deps.logError(error); res.end(); });
      default:
        return text(res, 404, 'Not Found\n');
    }
  };
}

const plainPaths: Readonly<Record<string, true>> = { '/version': true, '/health': true, '/livez': true, '/readyz': true, '/metrics': true };

function serveHealth(
  res: GatewayResponse, checks: HealthChecks, target: { kind: HealthKind; check: string | null }, url: string,
  logError: (error: unknown) => void,
): void {
  // As etcd: unknown parameters are ignored, `verbose` counts by its presence.
  const query = new URLSearchParams(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '');
  const exclude = new Set(query.getAll('exclude').filter((name) => name !== ''));
  runHealth(checks, target, { exclude, verbose: query.has('verbose') }).then(
    (answer) => text(res, answer.status, answer.body),
    (error: unknown) => {
      logError(error);
      text(res, 500, 'internal error\n');
    },
  );
}

function serveRpc(req: GatewayRequest, res: GatewayResponse, route: GatewayRoute, deps: GatewayDeps): void {
  const grpcRoute = deps.grpcRoute(route.grpcPath);
  if (grpcRoute === undefined) {
    req.resume();
    return unaryError(res, status.UNIMPLEMENTED, `The server does not implement the method ${route.grpcPath}`);
  }
  const authorization = req.headers['authorization'];
  const token = typeof authorization === 'string' && authorization !== '' ? authorization : null;
  const call = new GatewayCall(route, grpcRoute, res, deps.logError, principalOfSocket(req.socket), token, req.socket);
  if (route.requestStream) return streamRequests(req, call, route, deps.bodyBytesMax);
  let bytes = 0;
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => {
    if (call.ended) return;
    bytes += chunk.length;
    if (bytes > deps.bodyBytesMax) {
      call.fail({ code: status.RESOURCE_EXHAUSTED, details: `etcdserver: request is too large (a gateway request body is at most ${deps.bodyBytesMax} bytes)` });
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (call.ended) return;
    try {
      call.request = call.decode(chunks.length === 0 ? {} : parseBody(Buffer.concat(chunks)));
    } catch (error) {
      return inputError(call, error, deps);
    }
    call.run();
  });
}

/** Bidi and client-streaming calls: the handler runs at once and hears each object as it is read. */
function streamRequests(req: GatewayRequest, call: GatewayCall, route: GatewayRoute, bodyBytesMax: number): void {
  const objects = new JsonObjectStream(bodyBytesMax);
  let requestsEnded = false;
  const endRequests = (): void => {
    if (requestsEnded) return;
    requestsEnded = true;
    if (!keepsOpenAfterRequestEnd.has(route.grpcPath) && !call.ended) call.emit('end');
  };
  call.run();
  req.on('data', (chunk: Buffer) => {
    if (requestsEnded || call.ended) return;
    let found: unknown[];
    try {
      found = objects.push(chunk);
    } catch {
      found = [];
      endRequests(); // as grpc-gateway: a decoding error closes the request side, the call goes on
    }
    for (const object of found) {
      if (call.ended) return;
      let request: unknown;
      try {
        request = call.decode(object);
      } catch {
        return endRequests();
      }
      call.push(request);
    }
  });
  req.on('end', endRequests);
}

function inputError(call: GatewayCall, error: unknown, deps: GatewayDeps): void {
  if (!(error instanceof GatewayInputError)) deps.logError(error);
  call.fail({ code: status.INVALID_ARGUMENT, details: (error as Error).message });
}

function unaryError(res: GatewayResponse, code: number, details: string): void {
  res.writeHead(httpStatusOf(code), { ...gatewayHeaders, 'content-type': 'application/json' });
  res.end(unaryErrorBody({ code, details }));
}

function json(res: GatewayResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function text(res: GatewayResponse, code: number, body: string): void {
  res.writeHead(code, { ...gatewayHeaders, 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
  res.end(body);
}
