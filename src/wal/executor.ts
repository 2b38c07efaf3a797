// Executors run planned op batches. The worker executor is the production one: fdatasync blocks
// only the worker thread, which takes its requests through shared memory (shared-channel.ts).
// The inline one runs on the caller's thread (tests, crash injection).
import { Worker } from 'node:worker_threads';
import { assert } from '../base/assert.js';
import { executeOps, realFileIo } from './io-ops.js';
import type { FileIo, OpenSegments } from './io-ops.js';
import {
  Slot, createSharedChannel, decodeError, encodeRequest, splitForChannel, waitAsync,
} from './shared-channel.js';
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

export class WorkerExecutor implements WalExecutor {
  private readonly worker: Worker;
  private readonly channel = createSharedChannel();
  private lastId = 0;
  private inFlight = false;
  /** Batches handed to run() and not settled yet. */
  private queued = 0;
  private exited: Error | null = null;
  /** Batches run one at a time, in call order. */
  private tail: Promise<void> = Promise.resolve();

  constructor() {
    this.worker = new Worker(new URL('./sync-worker.js', import.meta.url), { workerData: this.channel });
    // Idle, the worker must not keep the process alive; a batch in flight must.
    this.worker.unref();
    this.worker.on('error', (error) => this.fail(error));
    this.worker.on('exit', (code) => this.fail(new Error(`WAL sync worker exited (${code})`)));
  }

  run(ops: readonly WalOp[]): Promise<void> {
    // Idle, the first request goes to the thread now, in the caller's turn, rather than after
    // the microtasks already queued (a leader's HTTP answers, say): it is on the commit path.
    const run = this.queued === 0 ? this.runNow(ops) : this.tail.then(() => this.runNow(ops));
    this.queued++;
    const settled = run.finally(() => this.queued--);
    this.tail = settled.catch(() => {});
    return settled;
  }

  private async runNow(ops: readonly WalOp[]): Promise<void> {
    for (const request of splitForChannel(ops)) await this.request(request);
  }

  async close(): Promise<void> {
    await this.tail;
    if (this.exited === null) {
      await this.request(null).catch(() => {}); // the thread leaves its wait loop
      this.exited = new Error('WAL executor closed');
    }
    await this.worker.terminate();
  }

  /** One request through shared memory; resolves when the thread answered it. */
  private async request(ops: readonly WalOp[] | null): Promise<void> {
    if (this.exited !== null) throw this.exited;
    assert(!this.inFlight, 'one WAL request at a time');
    const { control, data, errors } = this.channel;
    encodeRequest(ops, data);
    const id = ++this.lastId;
    this.inFlight = true;
    this.worker.ref();
    try {
      Atomics.store(control, Slot.request, id);
      Atomics.notify(control, Slot.request);
      while (Atomics.load(control, Slot.done) !== id) {
        if (this.exited !== null) throw this.exited;
        // The timeout only bounds how late a dead thread is noticed.
        const wait = waitAsync(control, Slot.done, id - 1, 1000);
        if (wait.async) await wait.value;
      }
    } finally {
      this.inFlight = false;
      this.worker.unref();
    }
    if (ops !== null && Atomics.load(control, Slot.status) !== 0) {
      const { message, code } = decodeError(errors, Atomics.load(control, Slot.errorBytes));
      throw new WalIoError(message, code);
    }
  }

  private fail(error: Error): void {
    if (this.exited === null) this.exited = error;
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
