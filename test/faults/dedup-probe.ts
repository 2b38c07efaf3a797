// The dedup probe of the clock-jump fault. Request-ID dedup is the one promise that rests on a
// wall clock: each entry carries its proposer's Date.now(), and the dedup window (10 minutes)
// is measured on the maximum of those. Around a step of one member's clock the probe sends, to
// that member directly:
// - before the step: a put with Request-ID A;
// - after it: A again (a client retrying across the step), and a put with a fresh ID B twice.
// Each retry must get the first attempt's answer back (same revision), never a second write.
import { newRequestId, type BatonClient } from '../../src/client/index.js';
import { faultClient } from './kv-client.js';

export interface DedupProbe {
  readonly probes: number;
  readonly unknown: number;
  readonly violations: string[];
  /** The nemesis's duringClockJump hook. */
  around(victim: string, offsetMs: number): Promise<void>;
  close(): Promise<void>;
}

export function startDedupProbe(urlOf: (name: string) => string): DedupProbe {
  const clients = new Map<string, BatonClient>();
  const clientOf = (name: string): BatonClient => {
    let client = clients.get(name);
    if (client === undefined) {
      client = faultClient([urlOf(name)], Math.random, 2_000);
      clients.set(name, client);
    }
    return client;
  };
  let pending: { key: string; requestId: string; revision: number } | null = null;
  let n = 0;
  const state = { probes: 0, unknown: 0, violations: [] as string[] };
  const put = async (name: string, key: string, requestId: string): Promise<number | null> => {
    try {
      return (await clientOf(name).put(key, requestId, { requestId })).revision;
    } catch {
      return null;
    }
  };
  const compare = (what: string, first: number | null, again: number | null): void => {
    state.probes += 1;
    if (first === null || again === null) state.unknown += 1;
    else if (first !== again) state.violations.push(`${what}: applied twice (revisions ${first} and ${again})`);
  };
  return {
    get probes() {
      return state.probes;
    },
    get unknown() {
      return state.unknown;
    },
    violations: state.violations,
    async around(victim, offsetMs) {
      if (offsetMs === 0) {
        const key = `/faults-dedup/${n++}`;
        const requestId = newRequestId();
        const revision = await put(victim, key, requestId);
        pending = revision === null ? null : { key, requestId, revision };
        return;
      }
      const step = `${offsetMs > 0 ? '+' : ''}${offsetMs} ms on ${victim}`;
      if (pending !== null) {
        const again = await put(victim, pending.key, pending.requestId);
        compare(`a put retried across a wall-clock step of ${step}`, pending.revision, again);
        pending = null;
      }
      const key = `/faults-dedup/${n++}`;
      const requestId = newRequestId();
      const first = await put(victim, key, requestId);
      const again = await put(victim, key, requestId);
      compare(`a put sent after a wall-clock step of ${step}, then retried`, first, again);
    },
    async close() {
      await Promise.all([...clients.values()].map((client) => client.close()));
    },
  };
}
