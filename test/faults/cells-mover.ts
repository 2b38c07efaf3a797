// The mover of a fault run across cells: one move at a time, namespaces in turn, each to the
// cell that does not own it now, a seeded pause of 1-3 s between moves; no new move after the
// deadline. A move is followed on the control plane (any member that answers: its leader may be
// the nemesis's victim) until it is released or aborted and cleaned, or for 90 s at most.
import { SeededRandom, randomInt } from '../../src/base/random.js';
import { http, sleep } from '../cluster/harness.js';

export interface MoveOutcome {
  readonly prefix: string;
  readonly to: string;
  /** `released`, `aborted`, `refused` (the start was not taken) or `unfinished` (out of time). */
  readonly phase: string;
  /** When the move was asked for and seen ended, on the run's clock (to set beside the faults). */
  readonly startedMs: number;
  readonly endedMs: number;
  /** The write window the control plane measured (fence to the destination's table). */
  readonly windowMs?: number;
  readonly error?: string;
}

export interface Mover {
  readonly outcomes: MoveOutcome[];
  /** Resolves once the last move ended (call after the deadline). */
  readonly done: Promise<void>;
}

const finishMsMax = 90_000;

export function startMover(options: {
  readonly controlUrls: () => readonly string[];
  readonly cellIds: readonly string[];
  readonly prefixes: readonly string[];
  readonly deadline: number;
  readonly now: () => number;
  readonly seed: bigint;
}): Mover {
  const random = new SeededRandom(options.seed ^ 0x6d6f7665n);
  const outcomes: MoveOutcome[] = [];
  const call = (path: string, init?: RequestInit): Promise<{ status: number; body: any } | null> =>
    controlCall(options.controlUrls(), path, init);
  const done = (async () => {
    for (let n = 0; options.now() < options.deadline; n++) {
      await sleep(randomInt(random, 1_000, 3_000));
      if (options.now() >= options.deadline) break;
      const prefix = options.prefixes[n % options.prefixes.length] as string;
      const shown = await call(`/v1/control/namespaces${prefix}`);
      const owner = shown?.status === 200 ? (shown.body.cell as string) : null;
      if (owner === null) continue;
      const to = options.cellIds.find((id) => id !== owner) as string;
      const started = await call('/v1/control/moves', {
        method: 'POST', body: JSON.stringify({ prefix, to }), headers: { 'content-type': 'application/json' },
      });
      const startedMs = options.now();
      if (started?.status !== 200) {
        outcomes.push({ prefix, to, phase: 'refused', startedMs, endedMs: startedMs, error: `${started?.status ?? 'no answer'} ${JSON.stringify(started?.body ?? '')}` });
        continue;
      }
      outcomes.push({ ...(await followMove(call, prefix, to)), startedMs, endedMs: options.now() });
    }
  })();
  return { outcomes, done };
}

async function followMove(
  call: (path: string) => Promise<{ status: number; body: any } | null>,
  prefix: string,
  to: string,
): Promise<Omit<MoveOutcome, 'startedMs' | 'endedMs'>> {
  const started = Date.now();
  let move: { phase?: string; cleaned?: boolean; windowMs?: number; error?: string } = {};
  while (Date.now() - started < finishMsMax) {
    await sleep(200);
    const shown = await call(`/v1/control/namespaces${prefix}`);
    if (shown?.status === 200 && shown.body.move !== undefined) move = shown.body.move;
    const ended = move.phase === 'released' || move.phase === 'aborted';
    if (ended && move.cleaned === true) break;
  }
  const ended = move.phase === 'released' || move.phase === 'aborted';
  return {
    prefix,
    to,
    phase: ended ? (move.phase as string) : 'unfinished',
    ...(move.windowMs !== undefined ? { windowMs: move.windowMs } : {}),
    ...(move.error !== undefined ? { error: move.error } : {}),
  };
}

/** The first control member that answers (a killed leader's URL refuses the connection). */
async function controlCall(urls: readonly string[], path: string, init?: RequestInit): Promise<{ status: number; body: any } | null> {
  for (const url of urls) {
    const answer = await http(`${url}${path}`, { ...init, timeoutMs: 5_000 }).catch(() => null);
    if (answer !== null && answer.status !== 503 && answer.status !== 504) return answer;
  }
  return null;
}

/** `p50 120 ms, p99 480 ms` over the windows of released moves. */
export function describeWindows(outcomes: readonly MoveOutcome[]): string {
  const windows = outcomes.flatMap((o) => (o.phase === 'released' && o.windowMs !== undefined ? [o.windowMs] : []));
  if (windows.length === 0) return 'no windows';
  const sorted = [...windows].sort((a, b) => a - b);
  const at = (p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
  return `p50 ${at(50)} ms, p99 ${at(99)} ms, max ${sorted[sorted.length - 1]} ms`;
}
