// WorkerSession: a Session whose connection and keepalives run in a worker_thread. In Node a
// synchronous busy callback blocks the one thread, and a Session on that thread would neither
// renew nor notice that it stopped renewing. Here the worker keeps renewing whatever the main
// thread does, and `safeUntil`/`isSafe()` read shared memory synchronously, so code that checks
// them right after a long stall learns the truth: still safe if the worker renewed meanwhile,
// unsafe (safeUntil in the past) if it could not, even before the `lost` message is delivered.
import { EventEmitter } from 'node:events';
import { Worker } from 'node:worker_threads';
import { monotonicNowMs } from './clock.js';
import { ClosedError, SessionLostError } from './errors.js';
import { SharedSessionState, sessionStates } from './shared-session-state.js';

export interface WorkerSessionOptions {
  readonly endpoints: readonly string[];
  readonly discover?: boolean;
  readonly ttlSeconds?: number;
  readonly safetyMarginMs?: number;
}

/** What the worker receives (structured-cloned; the buffer is shared, not copied). */
export interface WorkerSessionData {
  readonly endpoints: string[];
  readonly discover: boolean;
  readonly ttlSeconds: number;
  readonly safetyMarginMs?: number;
  readonly buffer: SharedArrayBuffer;
}

type WorkerMessage =
  | { type: 'ready' }
  | { type: 'lost'; reason: string }
  | { type: 'closed' }
  | { type: 'failed'; message: string };

/**
 * @example
 * const endpoints = ['http://127.0.0.1:7001'];
 * const session = await WorkerSession.start({ endpoints, ttlSeconds: 5 });
 * heavySynchronousWork();                       // blocks the main thread; the worker renews
 * if (!session.isSafe()) throw new Error('ownership uncertain: stop');
 * await session.close();
 */
export class WorkerSession extends EventEmitter<{ lost: [SessionLostError] }> {
  private readonly controller = new AbortController();
  private closing: Promise<void> | null = null;

  private constructor(
    private readonly worker: Worker,
    private readonly shared: SharedSessionState,
  ) {
    super();
  }

  static async start(options: WorkerSessionOptions): Promise<WorkerSession> {
    const shared = SharedSessionState.create();
    const data: WorkerSessionData = {
      endpoints: [...options.endpoints],
      discover: options.discover ?? true,
      ttlSeconds: options.ttlSeconds ?? 10,
      ...(options.safetyMarginMs !== undefined ? { safetyMarginMs: options.safetyMarginMs } : {}),
      buffer: shared.buffer,
    };
    const script = new URL('./session-worker.js', import.meta.url);
    const worker = new Worker(script, { workerData: data });
    const session = new WorkerSession(worker, shared);
    await new Promise<void>((resolve, reject) => {
      const onMessage = (message: WorkerMessage): void => {
        if (message.type === 'ready') resolve();
        else if (message.type === 'failed') reject(new Error(`session worker: ${message.message}`));
        else session.onMessage(message);
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
      worker.once('exit', (code) => {
        reject(new Error(`session worker exited (${code}) before it was ready`));
      });
    });
    worker.removeAllListeners('exit');
    worker.on('exit', () => session.markLost('the session worker exited'));
    return session;
  }

  get leaseId(): number {
    return this.shared.leaseId;
  }

  /** Monotonic ms (monotonicNowMs) until which the lease is certainly held (shared memory). */
  get safeUntil(): number {
    const alive = this.shared.state === sessionStates.alive;
    return alive ? this.shared.safeUntilMs : Number.NEGATIVE_INFINITY;
  }

  /** Synchronous and truthful even right after the main thread was blocked. */
  isSafe(): boolean {
    return this.shared.state === sessionStates.alive && monotonicNowMs() < this.shared.safeUntilMs;
  }

  /** Renewals acknowledged so far (the worker's count). */
  get renewals(): number {
    return this.shared.renewals;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Revokes the lease and ends the worker. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.controller.abort(new ClosedError('session closed'));
      this.worker.once('exit', () => resolve());
      this.worker.postMessage({ type: 'close' });
      // A worker that cannot finish its revoke in time is stopped; the lease then just expires.
      setTimeout(() => void this.worker.terminate(), 15_000).unref();
    });
    return this.closing;
  }

  private onMessage(message: WorkerMessage): void {
    if (message.type === 'lost') this.markLost(message.reason);
  }

  private markLost(reason: string): void {
    if (this.controller.signal.aborted) return;
    const error = new SessionLostError(this.leaseId, reason);
    this.controller.abort(error);
    this.emit('lost', error);
  }
}
