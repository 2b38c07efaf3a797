// Executors run planned op batches. The worker executor is the production one: fdatasync blocks
// only the worker thread. The inline one runs on the caller's thread (tests, crash injection).
import { Worker } from 'node:worker_threads';
import { assert } from '../base/assert.js';
import { executeOps, realFileIo } from './io-ops.js';
import type { FileIo, OpenSegments } from './io-ops.js';
import type { SyncRequest, SyncResponse } from './sync-worker.js';
import type { WalExecutor, WalOp } from './types.js';

export class WalIoError extends Error {
  override name = 'WalIoError';
  constructor(
    message: string,
    readonly code: string | null,
  ) {
    super(message);
  }
}

interface Waiter {
  resolve(): void;
  reject(error: Error): void;
}

export class WorkerExecutor implements WalExecutor {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, Waiter>();
  private nextId = 1;
  private exited: Error | null = null;

  constructor() {
    this.worker = new Worker(new URL('./sync-worker.js', import.meta.url));
    // Idle, the worker must not keep the process alive; a batch in flight must.
    this.worker.unref();
    this.worker.on('message', (response: SyncResponse) => this.settle(response));
    this.worker.on('error', (error) => this.failAll(error));
    this.worker.on('exit', (code) => this.failAll(new Error(`WAL sync worker exited (${code})`)));
  }

  run(ops: readonly WalOp[]): Promise<void> {
    if (this.exited !== null) return Promise.reject(this.exited);
    const id = this.nextId++;
    // Moving each write buffer's memory to the worker avoids a copy; only whole-ArrayBuffer
    // buffers are moved (a pooled slice would take its neighbours with it).
    const transfer: ArrayBuffer[] = [];
    for (const op of ops) {
      if (op.type !== 'write') continue;
      const buffer = op.data.buffer;
      const whole = op.data.byteOffset === 0 && op.data.byteLength === buffer.byteLength;
      if (buffer instanceof ArrayBuffer && whole) {
        transfer.push(buffer);
      }
    }
    const request: SyncRequest = { id, ops };
    return new Promise<void>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      if (this.waiting.size === 1) this.worker.ref();
      this.worker.postMessage(request, transfer);
    });
  }

  async close(): Promise<void> {
    assert(this.waiting.size === 0, 'no batch in flight at close');
    this.exited = new Error('WAL executor closed');
    await this.worker.terminate();
  }

  private settle(response: SyncResponse): void {
    const waiter = this.waiting.get(response.id);
    assert(waiter !== undefined, 'a response answers a request');
    this.waiting.delete(response.id);
    if (this.waiting.size === 0) this.worker.unref();
    if (response.ok) waiter.resolve();
    else waiter.reject(new WalIoError(response.message, response.code));
  }

  private failAll(error: Error): void {
    if (this.exited === null) this.exited = error;
    for (const waiter of this.waiting.values()) waiter.reject(error);
    this.waiting.clear();
  }
}

/** Runs ops synchronously on the calling thread; `io` can inject faults. */
export class InlineExecutor implements WalExecutor {
  private readonly open: OpenSegments = new Map();

  constructor(private readonly io: FileIo = realFileIo) {}

  run(ops: readonly WalOp[]): Promise<void> {
    try {
      executeOps(ops, this.open, this.io);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  close(): Promise<void> {
    // Closing through the real fs even after an injected crash: descriptors must not leak.
    for (const fd of this.open.values()) realFileIo.close(fd);
    this.open.clear();
    return Promise.resolve();
  }
}
