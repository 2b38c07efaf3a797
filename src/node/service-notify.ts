// systemd's readiness protocol (Type=notify): when the service manager gave us NOTIFY_SOCKET, the
// node says READY=1 only once it serves a linearizable read: it has joined its cell, knows the
// leader and has applied up to the leader's commit. "Started" then means "useful", so a rolling
// restart driven by systemd (or anything that waits on the unit) moves on only then.
// Node cannot send Unix datagrams itself, so the message goes through systemd's own
// `systemd-notify` (NotifyAccess=all in the unit: it is a child process).
import { execFile } from 'node:child_process';
import { KeyNotFoundError } from '../base/errors.js';
import type { CellService } from '../kv/cell-service.js';
import type { NodeLogger } from './node.js';

/** How often readiness is tried until the node serves (a linearizable read waits its own timeout). */
const readinessRetryMs = 200;

export interface ServiceNotifier {
  /** Resolves once READY=1 was sent (at once when not under a service manager). */
  readonly ready: Promise<void>;
  stopping(): void;
  cancel(): void;
}

export function notifyServiceManager(env: NodeJS.ProcessEnv, service: CellService, name: string, log: NodeLogger): ServiceNotifier {
  const socket = env['NOTIFY_SOCKET'];
  if (socket === undefined || socket === '') return { ready: Promise.resolve(), stopping() {}, cancel() {} };
  let cancelled = false;
  const send = (assignments: readonly string[]): Promise<void> => new Promise((resolve) => {
    execFile('systemd-notify', [...assignments], { env: { ...env, NOTIFY_SOCKET: socket }, timeout: 5_000 }, (error) => {
      if (error !== null) log.warn(`systemd-notify ${assignments.join(' ')} failed (the unit may time out): ${error.message}`);
      resolve();
    });
  });
  const ready = (async () => {
    while (!cancelled) {
      try {
        await service.linearizableRange({ type: 'get', key: '/health', keysOnly: true });
        break;
      } catch (error) {
        if (error instanceof KeyNotFoundError) break; // an answer: the read worked
        await new Promise((resolve) => setTimeout(resolve, readinessRetryMs));
      }
    }
    if (cancelled) return;
    await send(['--ready', `--status=member ${name} serving`]);
    log.info('told the service manager: ready');
  })();
  return {
    ready,
    stopping: () => void send(['STOPPING=1', `--status=member ${name} stopping`]),
    cancel: () => void (cancelled = true),
  };
}
