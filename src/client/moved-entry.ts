// A waiting acquire or campaign ended by a namespace move (`wrong_cell` at the fence) on a client
// that talks to cells directly: its stream stays on the source, so it cannot go on waiting, but
// its queue entry moved to the destination with the namespace (docs/design/cells.md, "Leases and
// lock waiters across a move"), where the session's lease keeps it alive: once at the head it would
// hold the lock for everyone. So it is withdrawn over HTTP, which follows `wrong_cell` to the new
// owner: the same request repeated with its Request-ID and no wait finds the entry and leaves the
// queue (lock_held), or finds it granted by then and gives the grant back. Repeated while the
// destination is still taking the namespace (it answers wrong_cell or unavailable meanwhile).
import { BatonError, LockHeldError } from '../base/errors.js';
import type { BatonClient } from './client.js';
import { monotonicNowMs } from './clock.js';
import { postJson } from './coordination.js';
import { backoffDelayMs } from './retry.js';
import { sleep } from './stream-call.js';

/** How long the withdrawal is tried (the move's window is far shorter; then the lease's end does it). */
const withdrawMsMax = 60_000;

export interface MovedEntry<T> {
  /** The acquire or campaign frame (its waitMs is replaced by 0). */
  readonly frame: Record<string, unknown>;
  readonly requestId: string;
  readonly giveBack: (granted: T) => Record<string, unknown>;
  /** The session's signal: once it aborts the lease's end removes the entry anyway. */
  readonly signal: AbortSignal;
}

export function withdrawMovedEntry<T>(client: BatonClient, entry: MovedEntry<T>): void {
  void (async () => {
    const startMs = monotonicNowMs();
    for (let attempt = 0; !entry.signal.aborted && !client.isClosed && monotonicNowMs() - startMs < withdrawMsMax; attempt++) {
      try {
        const { path, body } = httpOf({ ...entry.frame, waitMs: 0 });
        const granted = await postJson<T>(client, path, body, { mutation: true, requestId: entry.requestId });
        const back = httpOf(entry.giveBack(granted));
        await postJson(client, back.path, back.body, { mutation: true });
        return;
      } catch (error) {
        if (error instanceof LockHeldError) return; // withdrawn
        const moving = error instanceof BatonError && (error.retryable || error.code === 'wrong_cell');
        if (!moving) return; // gone (lease_not_found, lock_not_held) or refused for good
      }
      await sleep(backoffDelayMs(client.retryPolicy, attempt, client.random), entry.signal);
    }
  })();
}

/** The HTTP twin of a lock or election frame (the same JSON on both: docs/api/locks.md). */
function httpOf(frame: Record<string, unknown>): { path: string; body: Record<string, unknown> } {
  const { type, name, ...fields } = frame;
  const at = (kind: string, action: string): string => `/v1/${kind}/${encodeURIComponent(String(name))}/${action}`;
  switch (type) {
    case 'lockAcquire': return { path: at('locks', 'acquire'), body: fields };
    case 'lockRelease': return { path: at('locks', 'release'), body: fields };
    case 'campaign': return { path: at('elections', 'campaign'), body: fields };
    case 'resign': return { path: at('elections', 'resign'), body: fields };
    default: throw new Error(`no HTTP twin for a ${String(type)} frame`);
  }
}
