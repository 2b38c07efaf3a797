// The WAL's sync thread: it runs each batch of ops (writeSync + fdatasyncSync) and answers, so
// the event loop never waits on the disk. One batch at a time, in arrival order.
import { parentPort } from 'node:worker_threads';
import { assert } from '../base/assert.js';
import { executeOps, realFileIo } from './io-ops.js';
import type { OpenSegments } from './io-ops.js';
import type { WalOp } from './types.js';

export interface SyncRequest {
  readonly id: number;
  readonly ops: readonly WalOp[];
}

export type SyncResponse =
  | { readonly id: number; readonly ok: true }
  | {
      readonly id: number;
      readonly ok: false;
      readonly message: string;
      readonly code: string | null;
    };

const port = parentPort;
assert(port !== null, 'sync-worker runs as a worker thread');
const open: OpenSegments = new Map();

port.on('message', (request: SyncRequest) => {
  let response: SyncResponse;
  try {
    executeOps(request.ops, open, realFileIo);
    response = { id: request.id, ok: true };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? null;
    response = { id: request.id, ok: false, message: String((error as Error).message), code };
  }
  port.postMessage(response);
});
