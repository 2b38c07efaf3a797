// An in-process node for transport tests: the real HTTP handler, SSE route and stream server over
// an MVCC store on a MemoryEngine, with a cell that applies writes at once (no Raft).
import type { StoredPolicy } from '../../../src/mvcc/index.js';
import { createServer, type Server } from 'node:http';
import { createHttpHandler, defaultApiLimits } from '../../../src/api/http/index.js';
import { createWatchRoutes } from '../../../src/api/http/watch-routes.js';
import { StreamServer, WatchService, type WatchServiceOptions } from '../../../src/api/stream/index.js';
import type * as api from '../../../src/api/types.js';
import { AccessGuard } from '../../../src/auth/index.js';
import { MemoryEngine, MvccStore, type Command, type CommandResult } from '../../../src/mvcc/index.js';
import { commandEntry } from './model.js';

export class DirectCell implements api.CellApi {
  readonly cellId = 'cell-test';
  private index = 0;
  /** The production guard over this store: the policy is whatever the test stored. */
  readonly guard: AccessGuard;
  constructor(
    readonly store: MvccStore,
    private readonly onApplied: () => void,
  ) {
    this.guard = new AccessGuard(store);
  }
  async readBarrier(): Promise<void> {}
  localPolicyRecord(): StoredPolicy {
    return this.store.policyRecord();
  }
  checkAdmin(principal: string): void {
    this.guard.checkAdmin(principal);
  }
  checkClusterInfo(principal: string): void {
    this.guard.checkClusterInfo(principal);
  }
  revision(): number {
    return this.store.revision;
  }
  apply(op: Command): CommandResult {
    const [outcome] = this.store.applyBatch([commandEntry(++this.index, op)]);
    this.onApplied();
    if (outcome?.type === 'failed') throw outcome.error;
    if (outcome?.type !== 'applied') throw new Error('not applied');
    return outcome.result;
  }
  async put(request: api.PutRequest): Promise<api.PutResult> {
    const r = this.apply({ type: 'put', ...request });
    if (r.type !== 'put') throw new Error('put');
    return { created: r.created, version: r.version, revision: r.revision, fencingToken: r.fencingToken };
  }
  async range(request: api.RangeRequest): Promise<api.RangeResult> {
    const r = this.store.range({ type: 'get', ...request });
    return { revision: r.revision, count: r.count, more: r.more, kvs: r.kvs };
  }
  async deleteRange(request: api.DeleteRequest): Promise<api.DeleteResult> {
    const r = this.apply({ type: 'delete', ...request });
    if (r.type !== 'delete') throw new Error('delete');
    return { deleted: r.deleted, revision: r.revision };
  }
  async txn(): Promise<api.TxnResult> {
    throw new Error('not in the direct cell');
  }
  async policyRecord(): Promise<StoredPolicy> {
    return this.store.policyRecord();
  }
  async setPolicyRecord(record: Uint8Array, ifVersion: number): Promise<{ version: number }> {
    const r = this.apply({ type: 'policySet', record, ifVersion });
    if (r.type !== 'policySet') throw new Error('policySet');
    return { version: r.version };
  }
  async compact(revision: number): Promise<{ revision: number; compactRevision: number }> {
    const r = this.apply({ type: 'compact', revision });
    if (r.type !== 'compact') throw new Error('compact');
    return { revision: r.revision, compactRevision: r.compactRevision };
  }
  status(): api.ClusterStatus {
    throw new Error('not in the direct cell');
  }
  healthy(): boolean {
    return true;
  }
  ready(): { ready: boolean; reason: string } {
    return { ready: true, reason: 'ok' };
  }
  metricsText(): Promise<string> {
    return Promise.resolve('');
  }
}

export interface InProcessNode {
  readonly url: string;
  readonly wsUrl: string;
  readonly cell: DirectCell;
  readonly service: WatchService;
  stop(): Promise<void>;
}

export async function startInProcessNode(options: Partial<WatchServiceOptions> = {}): Promise<InProcessNode> {
  const store = new MvccStore(new MemoryEngine());
  const service = new WatchService(store, new AccessGuard(store), options);
  const cell = new DirectCell(store, () => service.onApplied());
  const logError = (error: unknown): void => console.error(error);
  const handler = createHttpHandler({ cell, limits: defaultApiLimits, routeGroups: [createWatchRoutes(service)], logError });
  const server: Server = createServer(handler);
  const stream = new StreamServer({ cell, apiLimits: defaultApiLimits, service, logError });
  stream.attach(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}/v1/stream`,
    cell,
    service,
    async stop() {
      await service.stop();
      stream.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

export { SseClient, StreamClient } from './clients.js';
