// What the scale bench needs of a 3-member cell, for Baton and for etcd alike: the data path
// (transactions of puts or deletes, the revision, compaction), each member's processes, files
// and readiness, and the operator's tasks (restart a member, replace a wiped one, back up the
// store). `baton-scale-cell.ts` and `etcd-scale-cell.ts` implement it.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Protocol, SystemName } from './protocols.js';

export interface ScaleCell {
  readonly system: SystemName;
  /** How a single put and a linearizable get are spelled over HTTP (load.ts's workloads). */
  readonly protocol: Protocol;
  /** What the data path is, for the report (e.g. "native HTTP /v1/txn", "gRPC KV.Txn"). */
  readonly dataPath: string;
  names(): string[];
  clientUrls(): URL[];
  leader(): Promise<string>;
  /** The member's server processes now (they change when it restarts). */
  pids(name: string): number[];
  dataDir(name: string): string;
  /** The store's own file (Baton `db/state.mdb`, etcd `member/snap/db`). */
  storeFile(name: string): string;

  /** One transaction of puts of these keys (the scale value), through the worker's member. */
  putTxn(keys: readonly string[], worker: number): Promise<void>;
  deleteTxn(keys: readonly string[], worker: number): Promise<void>;
  /** A failure worth retrying (overload, no leader yet, a dropped connection): its reason. */
  retryable(error: Error): string | null;
  revision(): Promise<number>;
  /** Compacts history below `revision`; resolves when the cell answered (see `compactNote`). */
  compact(revision: number): Promise<void>;
  readonly compactNote: string;

  /** 'ready' once the member says it is ready and serves a linearizable get; else why not. */
  probe(name: string): Promise<string>;
  stopMember(name: string, signal: NodeJS.Signals): Promise<void>;
  startMember(name: string): void;
  /**
   * With `name` stopped: removes it from the cell, wipes its data directory, adds it back as a
   * learner, starts it and promotes it once it has caught up. `onStep` hears each step's end.
   */
  replaceMember(name: string, onStep: (step: string) => void): Promise<ReplaceTimings>;
  /** A backup of the whole store from member `via` into `file`, by the system's own tool. */
  backup(file: string, via: string): Promise<BackupFigures>;
  /** An optional last step (etcd: defragment, the only way its file shrinks). */
  shrink?(name: string): Promise<{ seconds: number; note: string }>;
  /** The last lines a member printed (for failure reports). */
  tail(name: string): string;
  stopAll(): Promise<void>;
}

export interface ReplaceTimings {
  /** Removing the stopped member, wiping it and adding it back as a learner. */
  readonly removeAddSeconds: number;
  /** From starting the fresh process until it could be promoted (caught up). */
  readonly promotedSeconds: number;
  /** From starting the fresh process until it was promoted and `probe` says ready. */
  readonly readySeconds: number;
  readonly promoteAttempts: number;
}

export interface BackupFigures {
  readonly seconds: number;
  readonly bytes: number;
  readonly tool: string;
}

/** Polls `check` every `everyMs` until it returns a value, failing after `timeoutMs`. */
export async function pollUntil<T>(
  what: string,
  timeoutMs: number,
  everyMs: number,
  check: () => Promise<T | null>,
  lastWords: () => string = () => '',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${Math.round(timeoutMs / 1000)} s ${lastWords()}`);
    await sleep(everyMs);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** An answer that was not a success: its status and the start of its body. */
export class AnswerError extends Error {
  constructor(readonly status: number, body: string, what: string) {
    super(`${what}: ${status} ${body.slice(0, 600)}`);
  }
}

/** Connection-level failures any client may see while a member restarts or sheds load. */
export function connectionFailure(error: Error): string | null {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^E(CONNRESET|CONNREFUSED|PIPE|TIMEDOUT)$/.test(code)) return code;
  if (/no answer within|socket hang up/.test(error.message)) return 'timeout';
  return null;
}

const running = new Set<ChildProcess>();

/** Ends every command `run` started that is still running (a bench's cleanup). */
export function killRunCommands(): void {
  for (const child of running) child.kill('SIGKILL');
}

/** Runs a command to its end (at most `timeoutMs`); rejects with its output when it fails. */
export function run(command: string, args: readonly string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? process.env });
    running.add(child);
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30 * 60_000);
    const output: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      const text = Buffer.concat(output).toString('utf8');
      if (code === 0) resolve(text);
      else reject(new Error(`${command} ${args.join(' ')}: exit ${code ?? signal}\n${lastLines(text)}`));
    });
  });
}

/** The last lines of a tool's output, each cut short (etcdctl's JSON log lines are long). */
function lastLines(text: string): string {
  return text.trim().split('\n').slice(-4).map((line) => {
    const error = /"error":"([^"]*)"/.exec(line)?.[1];
    return error === undefined ? line.slice(0, 300) : `error: ${error}`;
  }).join('\n');
}
