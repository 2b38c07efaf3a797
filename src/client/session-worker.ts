// The worker side of WorkerSession: its own BatonClient, stream and Session, on a thread that
// application code never blocks. Every acknowledged renewal is copied to shared memory at once,
// so the main thread reads the truth synchronously. Messages in: {type: 'close'}. Messages out:
// {type: 'ready'}, {type: 'lost', reason}, {type: 'closed'}, {type: 'failed', message}.
import { parentPort, workerData } from 'node:worker_threads';
import { BatonClient } from './client.js';
import { SharedSessionState, sessionStates } from './shared-session-state.js';
import type { WorkerSessionData } from './worker-session.js';

async function run(): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error('session-worker runs only as a worker_thread');
  const data = workerData as WorkerSessionData;
  const shared = new SharedSessionState(data.buffer);
  const client = new BatonClient({ endpoints: data.endpoints, discover: data.discover });
  let session;
  try {
    session = await client.session({
      ttlSeconds: data.ttlSeconds,
      ...(data.safetyMarginMs !== undefined ? { safetyMarginMs: data.safetyMarginMs } : {}),
    });
  } catch (error) {
    await client.close();
    const code = (error as { code?: string }).code ?? (error as Error).name;
    const message = error instanceof Error ? `${code}: ${error.message}` : String(error);
    port.postMessage({ type: 'failed', message });
    return;
  }
  shared.leaseId = session.leaseId;
  shared.safeUntilMs = session.safeUntil;
  shared.renewals = session.renewals;
  shared.state = sessionStates.alive;
  session.on('renewed', (safeUntilMs) => {
    shared.safeUntilMs = safeUntilMs;
    shared.renewals = session.renewals;
  });
  session.signal.addEventListener('abort', () => {
    // Zero first: a reader that sees "alive" a moment longer still sees a safeUntil in the past.
    shared.safeUntilMs = 0;
    if (shared.state === sessionStates.alive) shared.state = sessionStates.lost;
  });
  session.on('lost', (error) => port.postMessage({ type: 'lost', reason: error.reason }));
  port.on('message', (message: { type: string }) => {
    if (message.type !== 'close') return;
    shared.safeUntilMs = 0;
    shared.state = sessionStates.closed;
    void client.close().then(
      () => port.postMessage({ type: 'closed' }),
      (error: unknown) => port.postMessage({ type: 'closed', message: String(error) }),
    ).finally(() => port.close());
  });
  port.postMessage({ type: 'ready' });
}

void run();
