// The etcd v3 gRPC API on a router (docs/design/cells.md, "The router's gRPC relay"): every call
// of etcd's services is relayed to the facade of the cell that owns its keys, as bytes, on the
// facade's own HTTP/2 server (src/api/grpc/h2). The facade on each cell stays the one place etcd's
// semantics live; the router only reads keys to pick the cell (grpc-route-keys.ts), refuses a
// call spanning cells (cross_cell, INVALID_ARGUMENT), retries once at once on wrong_cell, and
// answers MemberList itself (the router is the cluster's one endpoint for etcd clients).
import type { ServiceDefinition } from '@grpc/grpc-js';
import { assert } from '../base/assert.js';
import { GrpcServer } from '../api/grpc/h2/grpc-server.js';
import type { AnswerCallback, GrpcCall } from '../api/grpc/h2/grpc-call.js';
import { etcdServices } from '../api/grpc/proto.js';
import type { Router } from '../router/router.js';
import type { RouterListenerTls } from '../router/router-tls.js';
import { CellChannels } from './cell-channels.js';
import { UnaryRelay, type RelayedMethod } from './unary-relay.js';
import { serveWatchRelay, type WatchCodec } from './watch-relay.js';

export interface RouterGrpcOptions {
  readonly host: string;
  readonly port: number;
  /** The router's listener TLS (the same flags as its HTTP listener); absent: plain HTTP/2. */
  readonly tls?: RouterListenerTls;
  readonly log?: (message: string) => void;
}

/** As the facade: a 1.5 MiB request plus gRPC's overhead (src/api/grpc/server.ts). */
const receiveBytesMax = 2 * 1024 * 1024;
const identity = (bytes: unknown): unknown => bytes;

export class RouterGrpc {
  private stopped = false;

  private constructor(
    private readonly server: GrpcServer,
    private readonly channels: CellChannels,
    readonly url: string,
  ) {}

  static async start(router: Router, options: RouterGrpcOptions): Promise<RouterGrpc> {
    const logError = (error: unknown): void => options.log?.(`grpc relay: ${(error as Error)?.stack ?? String(error)}`);
    const channels = new CellChannels(() => router.upstreamTls());
    const server = new GrpcServer({ receiveBytesMax, logError });
    const scheme = options.tls === undefined ? 'http' : 'https';
    let url = `${scheme}://${options.host}:${options.port}`;
    const services = etcdServices();
    const memberList = services.Cluster['MemberList'];
    assert(memberList !== undefined, 'the Cluster service has MemberList');
    // The router is the one member an etcd client sees: clients that sync endpoints stay on it.
    const ownAnswer = (): Buffer => memberList.responseSerialize({
      header: { cluster_id: '0', member_id: '0', revision: '0', raft_term: '0' },
      members: [{ ID: '1', name: 'baton-router', peerURLs: [], clientURLs: [url], isLearner: false }],
    }) as Buffer;
    const relay = new UnaryRelay(router, channels, logError, ownAnswer);
    const watch = services.Watch['Watch'];
    assert(watch !== undefined, 'the Watch service has Watch');
    const codec: WatchCodec = {
      decodeRequest: (bytes) => watch.requestDeserialize(bytes),
      encodeRequest: (message) => watch.requestSerialize(message) as Buffer,
      decodeResponse: (bytes) => watch.responseDeserialize(bytes),
      encodeResponse: (message) => watch.responseSerialize(message) as Buffer,
    };
    for (const service of Object.values(services) as ServiceDefinition[]) {
      const raw: Record<string, unknown> = {};
      const handlers: Record<string, unknown> = {};
      for (const [name, method] of Object.entries(service)) {
        // Bytes in, bytes out: the relay decodes a request only to read its keys.
        raw[name] = { ...method, requestDeserialize: identity, responseSerialize: identity };
        const relayed: RelayedMethod = { path: method.path, decode: (bytes) => method.requestDeserialize(bytes) };
        if (method.path === watch.path) handlers[name] = (call: GrpcCall) => serveWatchRelay(call, { router, channels, codec, logError });
        else if (!method.requestStream && !method.responseStream) handlers[name] = (call: GrpcCall, callback: AnswerCallback) => relay.unary(relayed, call, callback);
        else if (!method.requestStream) handlers[name] = (call: GrpcCall) => relay.stream(relayed, call, 'serverStream');
        else {
          // etcd's only other streaming-request method: LeaseKeepAlive (by the lease's namespace).
          assert(method.responseStream && method.path === '/etcdserverpb.Lease/LeaseKeepAlive', `a relay for ${method.path}`);
          handlers[name] = (call: GrpcCall) => relay.stream(relayed, call, 'bidi');
        }
      }
      server.addService(raw as unknown as ServiceDefinition, handlers);
    }
    const tls = options.tls;
    const port = await server.listen(options.host, options.port, tls === undefined ? undefined : { material: tls, clientCertAuth: tls.clientCertAuth });
    url = `${scheme}://${options.host}:${port}`;
    const relayServer = new RouterGrpc(server, channels, url);
    router.attach(relayServer);
    return relayServer;
  }

  /** No new calls; open ones (watches, keepalives) get a short grace, then are cut. Once. */
  async stop(graceMs = 500): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.server.close(graceMs);
    this.channels.close();
  }
}
