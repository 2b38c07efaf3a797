// `baton lock NAME [-- CMD ARGS...]`: holds a lock while CMD runs. CMD gets the fencing token in
// BATON_FENCING_TOKEN (and the key in BATON_LOCK_KEY) to pass to whatever it changes. If the
// session is lost (no renewal confirmed before safeUntil), CMD gets SIGTERM at once and SIGKILL
// after a short grace, before the cell can expire the lease and hand the lock to someone else;
// `baton lock` then exits 4. When CMD exits, the lock is released and `baton lock` exits with
// CMD's code. Without CMD it prints the lock and holds it until Ctrl-C.
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import type { Lock, Session } from '../client/index.js';
import {
  exitCodes,
  integerFlag,
  makeClient,
  parseCommand,
  printJson,
  requirePositionals,
  runWithClient,
  UsageError,
  type OutputFormat,
} from './client-command.js';

const lockHelp = `usage: baton lock NAME [--ttl SECONDS] [--wait MS] [--owner TEXT] [--kill-grace MS]
                  [-- CMD ARGS...]
  Waits for lock NAME (at most --wait ms, default 30000; 0 = try once), then runs CMD with
  BATON_FENCING_TOKEN (the lock's fencing token) and BATON_LOCK_KEY in its environment, and
  releases the lock when CMD exits, exiting with CMD's code (128+N if killed by signal N).
  Pass the token to every resource CMD changes, and have the resource reject lower tokens:
  the lock alone cannot stop a CMD that is paused or slow (docs/client.md).
  If the session is lost while CMD runs, CMD gets SIGTERM at once and SIGKILL after
  --kill-grace ms (default: half the session's safety margin, so it is dead before the cell
  can give the lock away), and baton lock exits 4.
  Without CMD: prints the lock (key, token) and holds it until Ctrl-C (exit 4 if lost first).
  --ttl: the session lease's TTL (default 10). Ctrl-C / SIGTERM are passed on to CMD.
  Exit 1 with lock_held when --wait ends first.`;

/** `baton lock` exits with this when the session was lost while it held the lock. */
export const lockLostExitCode = 4;

export const lockCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(lockHelp, args, async () => {
    const split = args.indexOf('--');
    const own = split < 0 ? args : args.slice(0, split);
    const command = split < 0 ? [] : args.slice(split + 1);
    if (split >= 0 && command.length === 0) throw new UsageError('expected CMD after --');
    const { values, positionals, format, endpoints, discover } = parseCommand(own, {
      ttl: { type: 'string' },
      wait: { type: 'string' },
      owner: { type: 'string' },
      'kill-grace': { type: 'string' },
    });
    requirePositionals(positionals, 1, 1, 'one lock NAME (then -- CMD)');
    const name = positionals[0] as string;
    const ttlSeconds = integerFlag(values.ttl, 'ttl') ?? 10;
    const waitMs = integerFlag(values.wait, 'wait') ?? 30_000;
    const graceFlag = integerFlag(values['kill-grace'], 'kill-grace');
    const owner = values.owner ?? `baton-lock pid ${process.pid}`;
    const client = makeClient(endpoints, discover);
    let session: Session | null = null;
    try {
      session = await client.session({ ttlSeconds });
      const lock = await client.locks(session).acquire(name, { waitMs, owner });
      const graceMs = graceFlag ?? Math.max(100, Math.floor(session.safetyMarginMs / 2));
      if (command.length === 0) return await holdUntilInterrupted(lock, format);
      return await runHolding(lock, command, graceMs);
    } finally {
      // close() revokes the lease: the lock goes at once rather than at expiry.
      await session?.close().catch(() => undefined);
      await client.close();
    }
  });

function describe(lock: Lock, format: OutputFormat): void {
  const fields = { name: lock.name, key: lock.key, fencingToken: lock.token, revision: lock.revision };
  if (format === 'json') printJson(fields);
  else console.error(`baton: holding lock ${lock.name} (key ${lock.key}, fencing token ${lock.token})`);
}

async function holdUntilInterrupted(lock: Lock, format: OutputFormat): Promise<number> {
  describe(lock, format);
  const outcome = await new Promise<'stopped' | 'lost'>((resolve) => {
    const stop = (): void => resolve('stopped');
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    lock.signal.addEventListener('abort', () => resolve('lost'), { once: true });
  });
  if (outcome === 'lost') return reportLost(lock);
  await lock.release();
  return exitCodes.ok;
}

async function runHolding(lock: Lock, command: readonly string[], graceMs: number): Promise<number> {
  const child = spawn(command[0] as string, command.slice(1), {
    stdio: 'inherit',
    env: { ...process.env, BATON_FENCING_TOKEN: String(lock.token), BATON_LOCK_KEY: lock.key },
  });
  const exited = new Promise<number>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? 128 + signalNumber(signal)));
    child.once('error', (error) => {
      console.error(`baton: cannot run ${command[0]}: ${error.message}`);
      resolve(127);
    });
  });
  const forward = (signal: NodeJS.Signals): void => void child.kill(signal);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  let lost = false;
  const onLost = (): void => {
    lost = true;
    kill(child, graceMs);
  };
  lock.signal.addEventListener('abort', onLost, { once: true });
  try {
    const code = await exited;
    if (lost) return reportLost(lock);
    lock.signal.removeEventListener('abort', onLost);
    await lock.release();
    return code;
  } finally {
    process.off('SIGINT', forward);
    process.off('SIGTERM', forward);
  }
}

/** SIGTERM now, SIGKILL after the grace unless it exited. */
function kill(child: ChildProcess, graceMs: number): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }, graceMs);
  child.once('exit', () => clearTimeout(timer));
}

function reportLost(lock: Lock): number {
  const reason = lock.signal.reason as { code?: string; message?: string } | undefined;
  const code = reason?.code ?? 'session_lost';
  console.error(`baton: ${code}: lock ${lock.name} lost: ${reason?.message ?? 'the session ended'}`);
  return lockLostExitCode;
}

function signalNumber(signal: NodeJS.Signals | null): number {
  return signal === null ? 0 : (constants.signals[signal] ?? 1);
}
