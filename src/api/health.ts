// /livez and /readyz with etcd's meanings (Kubernetes KEP-4331, etcd 3.5.11+ and 3.6): named
// checks, `?exclude=<check>` (repeatable) drops one from the root path, `/readyz/<check>` runs one
// alone, and the answer is etcd's text: a `[+]<check> ok` or `[-]<check> failed: <reason>` line per
// check run, then `ok` on success (the lines only with `?verbose`); a failure is 503 and always
// carries the lines. Served on the native HTTP port (http/health-routes.ts) and on the gRPC
// facade's JSON gateway port (gateway/gateway.ts), as etcd serves them on its client port.
//
// livez: the process is alive and answers from its event loop; it checks nothing of the cell (a
//   member cut off from its leader is alive, and restarting it would not help). Its one check is
//   etcd's: a serializable read of the local store works.
// readyz: the member can serve: no CORRUPT alarm in its alarm table (src/api/alarms.ts; Baton's
//   table is per member, not replicated as etcd's), a serializable read works, a linearizable read
//   completes within a bound (a leader, a quorum, and this member applied up to the read index),
//   and it is not a learner. A linearizable read that completes also means the member has applied
//   every write acknowledged before it, so a serializable read right after a 200 misses none.
import { alarmType, type AlarmTable } from './alarms.js';

export const healthKinds = ['livez', 'readyz'] as const;
export type HealthKind = (typeof healthKinds)[number];

/** Resolves when the check passes; rejects with the reason it failed. */
export type HealthCheck = () => Promise<void>;

/** What the checks need from the node. */
export interface HealthSource {
  /** A keys-only read of one key from the local store. */
  serializableRead(): Promise<unknown>;
  /** A linearizable read (ReadIndex through the leader); bounded by `linearizableReadMs` here. */
  linearizableRead(): Promise<unknown>;
  readonly linearizableReadMs: number;
  isLearner(): boolean;
  readonly alarms: Pick<AlarmTable, 'list'>;
}

export interface HealthAnswer {
  readonly status: 200 | 503;
  readonly body: string;
}

/** The checks of each kind, in the order they run and print. */
export type HealthChecks = Readonly<Record<HealthKind, ReadonlyMap<string, HealthCheck>>>;

export function healthChecks(source: HealthSource): HealthChecks {
  const serializableRead: HealthCheck = async () => {
    await source.serializableRead();
  };
  return {
    livez: new Map([['serializable_read', serializableRead]]),
    readyz: new Map<string, HealthCheck>([
      ['data_corruption', async () => {
        if (source.alarms.list(alarmType.corrupt).length > 0) throw new Error('alarm activated: CORRUPT');
      }],
      ['serializable_read', serializableRead],
      ['linearizable_read', () => withinMs(source.linearizableRead(), source.linearizableReadMs)],
      ['non_learner', async () => {
        if (source.isLearner()) throw new Error('not supported for learner');
      }],
    ]),
  };
}

/** `/livez`, `/readyz` or `/<kind>/<check>`: which kind and, for a sub path, which check; else null. */
export function healthTarget(checks: HealthChecks, path: string): { kind: HealthKind; check: string | null } | null {
  for (const kind of healthKinds) {
    if (path === `/${kind}`) return { kind, check: null };
    const check = path.startsWith(`/${kind}/`) ? path.slice(kind.length + 2) : null;
    if (check !== null && checks[kind].has(check)) return { kind, check };
  }
  return null;
}

/**
 * Runs the checks of `kind` (one alone for a sub path; the root path without the excluded ones:
 * an unknown name in `exclude` is ignored, as etcd does, so probes written for another version
 * keep working) and renders etcd's answer.
 */
export async function runHealth(
  checks: HealthChecks,
  target: { kind: HealthKind; check: string | null },
  options: { exclude: ReadonlySet<string>; verbose: boolean },
): Promise<HealthAnswer> {
  const all = checks[target.kind];
  const names = target.check !== null ? [target.check] : [...all.keys()].filter((name) => !options.exclude.has(name));
  // Independent checks run at once: a slow linearizable read does not delay the others' answers.
  const results = await Promise.all(names.map(async (name) => {
    const check = all.get(name);
    if (check === undefined) return `[-]${name} failed: no such check\n`;
    try {
      await check();
      return `[+]${name} ok\n`;
    } catch (error) {
      return `[-]${name} failed: ${reasonOf(error)}\n`;
    }
  }));
  const lines = results.join('');
  const failed = results.some((line) => line.startsWith('[-]'));
  // etcd answers a failure with http.Error (the lines and a newline), success with `ok`.
  if (failed) return { status: 503, body: `${lines}\n` };
  return { status: 200, body: `${options.verbose ? lines : ''}ok\n` };
}

function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  // One line per check: a reason never breaks the format.
  return message.replace(/[\r\n]+/g, ' ');
}

function withinMs(work: Promise<unknown>, ms: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`a linearizable read did not complete within ${ms} ms`)), ms);
    work.then(() => {
      clearTimeout(timer);
      resolve();
    }, (error: unknown) => {
      clearTimeout(timer);
      reject(error instanceof Error ? error : new Error(String(error)));
    });
  });
}
