// An in-process node for transport tests: the api tests' store server (the real HTTP handler, SSE
// route and stream server over an MVCC store on a MemoryEngine, writes applied at once, no Raft).
import type { WatchService, WatchServiceOptions } from '../../../src/api/stream/index.js';
import { startStoreServer, type StoreCell } from '../api/api-server.js';

export interface InProcessNode {
  readonly url: string;
  readonly wsUrl: string;
  readonly cell: StoreCell;
  readonly service: WatchService;
  stop(): Promise<void>;
}

export async function startInProcessNode(options: Partial<WatchServiceOptions> = {}): Promise<InProcessNode> {
  const logError = (error: unknown): void => console.error(error);
  const { port, cell, service, stop } = await startStoreServer({ watch: options, logError });
  return { url: `http://127.0.0.1:${port}`, wsUrl: `ws://127.0.0.1:${port}/v1/stream`, cell, service, stop };
}

export { SseClient, StreamClient } from './clients.js';
