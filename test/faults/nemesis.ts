// The nemesis: one fault at a time, drawn from a seed, each healed before the next so a majority
// comes back between faults. Kinds:
// - kill: kill -9, restart from disk after the fault's duration;
// - pause / pause-long: SIGSTOP then SIGCONT, after 1-4 s, or 6-8 s (longer than the 5 s TTL of
//   the lease workload: the cell must neither lose live leases nor keep dead ones);
// - partition-one / partition-leader: one member (any, or the leader) cut off from its peers;
// - partition-majority: a minority (the leader in it half the time) cut off from the majority;
// - partition-bridge: two groups cut apart, with one member (the bridge) talking to both;
// - slow-disk: every WAL fdatasync of one member (the leader half the time) waits 50-400 ms;
// - clock-jump: one member's wall clock (often the leader's) steps forward or back, then steps
//   back to true time at the heal. Only Baton's wall-clock uses feel it: the proposal time in
//   each entry, the clock of the Request-ID dedup window (see dedup-probe.ts);
// - membership: one member (the leader half the time) is removed through the API, killed, and
//   after the fault's duration added back as a new learner with a wiped data directory, then
//   promoted once in sync (membership-fault.ts);
// - grow-first: a fresh node is added as a learner, caught up and promoted, then an old voter
//   (the leader half the time) is removed and its node retired: the cell grows first and shrinks
//   back, and over a run its members drift away from the initial ones (grow-first-fault.ts). One
//   cycle in five loses the spare mid-way and rolls it back.
// - older-copy: one member's data directory is copied, the cell runs on for the fault's
//   duration, then the member is restarted on the copy; it must say it went back in time (the
//   peer ledger) and is then replaced as an operator would (older-copy-fault.ts).
import { SeededRandom, randomInt } from '../../src/base/random.js';
import { findLeader, http, sleep, type TestCell } from '../cluster/harness.js';
import type { FaultControls } from './fault-controls.js';
import { growFirst } from './grow-first-fault.js';
import { olderCopy } from './older-copy-fault.js';
import { replaceMember, type Member } from './membership-fault.js';
import { RestartChecks } from './restart-check.js';

export const faultKinds = [
  'kill',
  'pause',
  'pause-long',
  'partition-one',
  'partition-leader',
  'partition-majority',
  'partition-bridge',
  'slow-disk',
  'clock-jump',
  'membership',
  'leader-transfer',
  'grow-first',
  'older-copy',
] as const;
export type FaultKind = (typeof faultKinds)[number];

export interface NemesisOptions {
  readonly kinds?: readonly FaultKind[];
  /** Faults to inject first, in this order, before the seeded draw from `kinds` begins. */
  readonly first?: readonly FaultKind[];
  /** Longest ordinary fault (pause-long has its own 6-8 s). */
  readonly faultMsMax?: number;
  /**
   * Largest clock step. The default (15 min) is beyond the 10-minute dedup window on purpose:
   * the dedup clock follows each member's clock steps, clamped, so a step of any size must not
   * break Request-ID dedup (issue 11 finding).
   */
  readonly clockJumpMaxMs?: number;
  /**
   * Called just before a clock jump on `victim` (offsetMs 0) and again once it is in force (the
   * dedup probe: a retry across the step, and a request sent after it).
   */
  readonly duringClockJump?: (victim: string, offsetMs: number) => Promise<void>;
  /** The cell's members changed (grow-first): the clients adopt the new list. */
  readonly membersChanged?: (members: readonly Member[]) => void;
}

export interface Nemesis {
  readonly counts: Map<FaultKind, number>;
  readonly log: string[];
  /** Stop after the current fault, heal everything, and wait for every member to be ready. */
  stop(): Promise<void>;
}

export function startNemesis(
  cell: TestCell,
  controls: FaultControls,
  seed: bigint,
  now: () => number,
  options: NemesisOptions = {},
): Nemesis {
  const random = new SeededRandom(seed ^ 0x6e656d65n);
  const counts = new Map<FaultKind, number>();
  const log: string[] = [];
  const kinds = options.kinds ?? faultKinds;
  const faultMsMax = options.faultMsMax ?? 4_000;
  const clockJumpMaxMs = options.clockJumpMaxMs ?? 900_000;
  let stopping = false;
  const pick = <T>(items: readonly T[]): T => items[randomInt(random, 0, items.length - 1)] as T;
  const shuffled = (items: readonly string[]): string[] => {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = randomInt(random, 0, i);
      [out[i], out[j]] = [out[j] as string, out[i] as string];
    }
    return out;
  };
  const restarts = new RestartChecks(cell, (what) => log.push(`${now().toFixed(0)} ms:   ${what}`));
  const leaderOr = async (fallback: string): Promise<string> =>
    findLeader(cell, cell.names, 3_000).catch(() => fallback);
  const loop = (async () => {
    for (let round = 0; round < 100_000 && !stopping; round++) {
      await sleep(randomInt(random, 1_000, 3_000));
      if (stopping) break;
      // A forced first fault still draws its place in the stream, so the rest of the run draws
      // as with any other first fault of that kind.
      const drawn = pick(kinds);
      const kind = options.first?.[round] ?? drawn;
      const duration = kind === 'pause-long' ? randomInt(random, 6_000, 8_000) : randomInt(random, 1_000, faultMsMax);
      const anyone = pick(cell.names);
      const leaderFirst = randomInt(random, 0, 1) === 1;
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
      const at = now().toFixed(0);
      const note = (what: string): void => {
        log.push(`${at} ms: ${kind} ${what}${kind === 'grow-first' ? '' : ` for ${duration} ms`}`);
      };
      switch (kind) {
        case 'kill':
          note(anyone);
          await cell.cell.kill9(anyone);
          await sleep(duration);
          cell.cell.start(anyone);
          restarts.restarted(anyone);
          break;
        case 'pause':
        case 'pause-long': {
          const victim = kind === 'pause-long' && leaderFirst ? await leaderOr(anyone) : anyone;
          note(victim);
          cell.cell.signal(victim, 'SIGSTOP');
          await sleep(duration);
          cell.cell.signal(victim, 'SIGCONT');
          break;
        }
        case 'partition-one':
        case 'partition-leader': {
          const victim = kind === 'partition-leader' ? await leaderOr(anyone) : anyone;
          note(victim);
          cell.isolate(victim);
          await sleep(duration);
          cell.healAll();
          break;
        }
        case 'partition-majority': {
          const leader = await leaderOr(anyone);
          const others = shuffled(cell.names.filter((n) => n !== leader));
          const minoritySize = Math.floor((cell.names.length - 1) / 2);
          const minority = leaderFirst ? [leader, ...others.slice(0, minoritySize - 1)] : others.slice(0, minoritySize);
          const majority = cell.names.filter((n) => !minority.includes(n));
          note(`${minority.join(',')} | ${majority.join(',')}`);
          cell.partition(minority, majority);
          await sleep(duration);
          cell.healAll();
          break;
        }
        case 'partition-bridge': {
          const [bridge, ...rest] = shuffled(cell.names) as [string, ...string[]];
          const half = Math.ceil(rest.length / 2);
          const left = rest.slice(0, half);
          const right = rest.slice(half);
          note(`${left.join(',')} | ${right.join(',')} bridged by ${bridge}`);
          cell.partition(left, right);
          await sleep(duration);
          cell.healAll();
          break;
        }
        case 'slow-disk': {
          const victim = leaderFirst ? await leaderOr(anyone) : anyone;
          const delayMs = randomInt(random, 50, 400);
          note(`${victim} (fsync +${delayMs} ms)`);
          controls.set(victim, { fsyncDelayMs: delayMs });
          await sleep(duration);
          controls.set(victim, { fsyncDelayMs: 0 });
          break;
        }
        case 'leader-transfer': {
          // Under load, through any member (a follower forwards it): the leader hands over to a
          // follower, then the fault waits its duration; clients ride through the change.
          const leader = await leaderOr('');
          const target = pick(cell.names.filter((n) => n !== leader));
          note(`${leader || '?'} -> ${target}`);
          await transferLeader(cell, target, pick(cell.names)).then(
            () => log.push(`${now().toFixed(0)} ms:   ${target} leads`),
            (error: unknown) => log.push(`${now().toFixed(0)} ms:   transfer refused: ${String(error)}`),
          );
          await sleep(duration);
          break;
        }
        case 'membership': {
          const victim = leaderFirst ? await leaderOr(anyone) : anyone;
          note(victim);
          await replaceMember(cell, victim, duration, (what) => log.push(`${now().toFixed(0)} ms:   ${what}`));
          break;
        }
        case 'grow-first': {
          // Drawn here, before any await, so the seed decides the plan.
          const loseSpareAfterMs = randomInt(random, 0, 4) === 0 ? randomInt(random, 0, 1_500) : null;
          const pickFrom = randomInt(random, 0, 1_000);
          note(`(${leaderFirst ? 'remove the leader' : 'remove an old voter'}${loseSpareAfterMs === null ? '' : ', lose the spare'})`);
          await growFirst(cell, {
            removeLeader: leaderFirst,
            pickOld: (names) => names[pickFrom % names.length] as string,
            loseSpareAfterMs,
          }, {
            say: (what) => log.push(`${now().toFixed(0)} ms:   ${what}`),
            membersChanged: (members) => options.membersChanged?.(members),
          });
          break;
        }
        case 'older-copy': {
          note(anyone);
          restarts.restoring(anyone);
          await olderCopy(cell, anyone, duration, (what) => log.push(`${now().toFixed(0)} ms:   ${what}`));
          break;
        }
        case 'clock-jump': {
          const victim = leaderFirst ? await leaderOr(anyone) : anyone;
          const sign = randomInt(random, 0, 1) === 1 ? 1 : -1;
          const offsetMs = sign * randomInt(random, Math.min(1_000, clockJumpMaxMs), clockJumpMaxMs);
          note(`${victim} (wall clock ${offsetMs > 0 ? '+' : ''}${offsetMs} ms)`);
          await options.duringClockJump?.(victim, 0);
          controls.set(victim, { clockOffsetMs: offsetMs });
          await sleep(controls.pollMs * 3);
          await options.duringClockJump?.(victim, offsetMs);
          await sleep(duration);
          controls.set(victim, { clockOffsetMs: 0 });
          break;
        }
      }
    }
  })();
  return {
    counts,
    log,
    async stop() {
      stopping = true;
      await loop;
      await restarts.settle();
      heal(cell, controls);
      await cell.cell.waitReady(30_000, cell.names);
    },
  };
}

/** POST /v1/cluster/leader through `via`, naming `target` by its member id. */
async function transferLeader(cell: TestCell, target: string, via: string): Promise<void> {
  const members = await http(`${cell.cell.clientUrl(via)}/v1/cluster/members`);
  const id = (members.body as { members?: { id: number; name: string }[] }).members?.find((m) => m.name === target)?.id;
  if (id === undefined) throw new Error(`${target} is not a member now`);
  const answer = await http(`${cell.cell.clientUrl(via)}/v1/cluster/leader`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ to: id }), timeoutMs: 10_000,
  });
  if (answer.status !== 200) throw new Error(`answered ${answer.status} ${JSON.stringify(answer.body)}`);
}

function heal(cell: TestCell, controls: FaultControls): void {
  cell.healAll();
  for (const name of cell.names) {
    controls.set(name, { fsyncDelayMs: 0, clockOffsetMs: 0 });
    if (cell.cell.isRunning(name)) cell.cell.signal(name, 'SIGCONT');
    else cell.cell.start(name);
  }
}
