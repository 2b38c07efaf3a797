// The scale bench's etcd 3.4 cell: three members on loopback whose processes can be stopped,
// restarted and replaced one by one, started with a backend quota that holds the data
// (`--quota-backend-bytes`, etcd's default 2 GiB would refuse writes with "mvcc: database space
// exceeded" near 2M keys) and auto-compaction off. The data path is etcd's gRPC KV API
// (`etcd-grpc-kv.ts`); member changes, backups and defragmentation go through `etcdctl`, as an
// operator would run them.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { stopChild } from './etcd-cell.js';
import { etcdMembers, etcdRetryable, etcdStatus, EtcdGrpcKv, hexId } from './etcd-grpc-kv.js';
import { fileBytes } from './host-stats.js';
import { etcdProtocol } from './protocols.js';
import { overScaleKeys, scaleKey, scaleValue } from './scale-keys.js';
import {
  AnswerError, connectionFailure, pollUntil, run,
  type BackupFigures, type ReplaceTimings, type ScaleCell,
} from './scale-cell.js';

export interface EtcdScaleMember {
  readonly name: string;
  readonly clientPort: number;
  readonly peerPort: number;
}

export interface EtcdScaleOptions {
  readonly dataDir: string;
  readonly members: readonly EtcdScaleMember[];
  readonly quotaBackendBytes: number;
  readonly workers: number;
  readonly readyTimeoutMs: number;
  readonly binary?: string;
}

const probeKey = Buffer.from(scaleKey(0));

export class EtcdScaleCell implements ScaleCell {
  readonly system = 'etcd' as const;
  readonly protocol = overScaleKeys(etcdProtocol);
  readonly dataPath = 'gRPC KV.Txn (grpc-js on etcd\'s protos)';
  readonly compactNote = 'KV.Compact physical=true: answers once the backend compaction is done; the file only shrinks by defragmentation';
  private readonly processes = new Map<string, ChildProcess>();
  private readonly logs = new Map<string, string[]>();
  private readonly kv: EtcdGrpcKv;
  private readonly token = `scale-${process.pid}`;

  constructor(private readonly options: EtcdScaleOptions) {
    this.kv = new EtcdGrpcKv(options.members.map((m) => `127.0.0.1:${m.clientPort}`), options.workers);
  }

  names(): string[] {
    return this.options.members.map((m) => m.name);
  }

  clientUrls(): URL[] {
    return this.options.members.map((m) => new URL(`http://127.0.0.1:${m.clientPort}`));
  }

  startAll(): void {
    for (const name of this.names()) this.start(name, 'new');
  }

  async waitReady(): Promise<void> {
    for (const name of this.names()) {
      await pollUntil(`etcd ${name} ready`, this.options.readyTimeoutMs, 200, async () =>
        (await this.probe(name)) === 'ready' ? true : null, () => this.tail(name));
    }
  }

  async leader(): Promise<string> {
    return pollUntil('an etcd leader', this.options.readyTimeoutMs, 200, async () => {
      for (const member of this.options.members) {
        const status = await etcdStatus(this.endpoint(member.name)).catch(() => null);
        if (status === null || status.leader === '0') continue;
        const list = await etcdMembers(this.endpoint(member.name)).catch(() => []);
        const leader = list.find((m) => m.id === status.leader)?.name;
        if (leader !== undefined) return leader;
      }
      return null;
    });
  }

  pids(name: string): number[] {
    const child = this.processes.get(name);
    return child?.pid === undefined || child.exitCode !== null || child.signalCode !== null ? [] : [child.pid];
  }

  dataDir(name: string): string {
    return join(this.options.dataDir, name);
  }

  storeFile(name: string): string {
    return join(this.dataDir(name), 'member', 'snap', 'db');
  }

  putTxn(keys: readonly string[], worker: number): Promise<void> {
    return this.kv.txn(keys.map((key) => ({ request_put: { key: Buffer.from(key), value: scaleValue } })), worker);
  }

  deleteTxn(keys: readonly string[], worker: number): Promise<void> {
    return this.kv.txn(keys.map((key) => ({ request_delete_range: { key: Buffer.from(key) } })), worker);
  }

  retryable(error: Error): string | null {
    return etcdRetryable(error) ?? connectionFailure(error);
  }

  revision(): Promise<number> {
    return this.kv.revision();
  }

  compact(revision: number): Promise<void> {
    return this.kv.compact(revision);
  }

  async probe(name: string): Promise<string> {
    const base = `http://127.0.0.1:${this.member(name).clientPort}`;
    try {
      const health = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2000) });
      const body = await health.json().catch(() => null) as { health?: string } | null;
      if (health.status !== 200 || body?.health !== 'true') return `health ${health.status} ${JSON.stringify(body)}`;
      const read = await fetch(`${base}/v3/kv/range`, {
        method: 'POST',
        body: JSON.stringify({ key: probeKey.toString('base64'), serializable: false }),
        signal: AbortSignal.timeout(5000),
      });
      const text = await read.text();
      return read.status === 200 ? 'ready' : `linearizable range ${read.status} ${text.slice(0, 100)}`;
    } catch (error) {
      return `no answer (${(error as Error).message})`;
    }
  }

  async stopMember(name: string, signal: NodeJS.Signals): Promise<void> {
    const child = this.processes.get(name);
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
  }

  startMember(name: string): void {
    this.start(name, 'new'); // an existing data directory decides; the flag is ignored then
  }

  async replaceMember(name: string, onStep: (step: string) => void): Promise<ReplaceTimings> {
    const began = performance.now();
    const leader = await this.leader();
    if (leader === name) throw new Error(`replaceMember: ${name} leads; replace a follower`);
    const old = (await etcdMembers(this.endpoint(leader))).find((m) => m.name === name);
    if (old === undefined) throw new Error(`${name} is not an etcd member`);
    await this.etcdctl(leader, ['member', 'remove', hexId(old.id)]);
    onStep(`etcdctl member remove ${hexId(old.id)} (${name})`);
    rmSync(this.dataDir(name), { recursive: true, force: true });
    const peerUrl = `http://127.0.0.1:${this.member(name).peerPort}`;
    const added = await this.etcdctl(leader, ['member', 'add', name, `--peer-urls=${peerUrl}`, '--learner']);
    const newId = /Member\s+([0-9a-f]+)\s+added/.exec(added)?.[1];
    if (newId === undefined) throw new Error(`etcdctl member add said: ${added}`);
    onStep(`etcdctl member add ${name} --learner: ${newId}, data wiped`);
    const removeAddSeconds = (performance.now() - began) / 1000;
    const started = performance.now();
    this.start(name, 'existing');
    let promoteAttempts = 0;
    await pollUntil(`etcdctl member promote ${newId}`, this.options.readyTimeoutMs, 500, async () => {
      promoteAttempts++;
      try {
        await this.etcdctl(await this.leader(), ['member', 'promote', newId]);
        return true;
      } catch (error) {
        if (/in sync|not started|too many requests|leader|timed out|unavailable|deadline/i.test((error as Error).message)) return null;
        throw error;
      }
    }, () => this.tail(name));
    const promotedSeconds = (performance.now() - started) / 1000;
    onStep(`promoted ${name} after ${promotedSeconds.toFixed(1)} s (${promoteAttempts} attempts)`);
    await pollUntil(`etcd ${name} ready`, this.options.readyTimeoutMs, 100, async () =>
      (await this.probe(name)) === 'ready' ? true : null, () => this.tail(name));
    return { removeAddSeconds, promotedSeconds, readySeconds: (performance.now() - started) / 1000, promoteAttempts };
  }

  async backup(file: string, via: string): Promise<BackupFigures> {
    const began = performance.now();
    await this.etcdctl(via, ['snapshot', 'save', file]);
    return { seconds: (performance.now() - began) / 1000, bytes: fileBytes(file), tool: 'etcdctl snapshot save' };
  }

  /**
   * Before the first start: every member's data directory from a backup, by `etcdctl snapshot
   * restore` (etcd 3.4's tool; etcdutl in 3.5+), one call per member as etcd documents it.
   */
  async restoreMembers(file: string): Promise<void> {
    const initialCluster = this.options.members.map((m) => `${m.name}=http://127.0.0.1:${m.peerPort}`).join(',');
    for (const member of this.options.members) {
      await run('etcdctl', [
        'snapshot', 'restore', file, '--name', member.name, '--data-dir', this.dataDir(member.name),
        '--initial-cluster', initialCluster, '--initial-cluster-token', `${this.token}-restored`,
        '--initial-advertise-peer-urls', `http://127.0.0.1:${member.peerPort}`,
      ], { env: { ...process.env, ETCDCTL_API: '3' }, timeoutMs: this.options.readyTimeoutMs });
    }
  }

  async shrink(name: string): Promise<{ seconds: number; note: string }> {
    const began = performance.now();
    await this.etcdctl(name, ['defrag']);
    return { seconds: (performance.now() - began) / 1000, note: `etcdctl defrag of ${name}` };
  }

  tail(name: string): string {
    return (this.logs.get(name) ?? []).join('').slice(-3000);
  }

  async stopAll(): Promise<void> {
    this.kv.close();
    await Promise.all([...this.processes.values()].map((child) => stopChild(child, 30_000)));
  }

  private start(name: string, state: 'new' | 'existing'): void {
    const member = this.member(name);
    const dir = this.dataDir(name);
    mkdirSync(dir, { recursive: true });
    const client = `http://127.0.0.1:${member.clientPort}`;
    const peer = `http://127.0.0.1:${member.peerPort}`;
    const initialCluster = this.options.members.map((m) => `${m.name}=http://127.0.0.1:${m.peerPort}`).join(',');
    const child = spawn(this.options.binary ?? 'etcd', [
      '--name', name, '--data-dir', dir,
      '--listen-client-urls', client, '--advertise-client-urls', client,
      '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
      '--initial-cluster', initialCluster, '--initial-cluster-state', state,
      '--initial-cluster-token', this.token,
      '--quota-backend-bytes', String(this.options.quotaBackendBytes),
      '--auto-compaction-retention', '0',
      '--logger', 'zap', '--log-level', 'warn',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    const log = this.logs.get(name) ?? [];
    this.logs.set(name, log);
    const collect = (chunk: Buffer): void => {
      log.push(chunk.toString('utf8'));
      if (log.length > 500) log.splice(0, log.length - 500);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    this.processes.set(name, child);
  }

  private etcdctl(via: string, args: readonly string[]): Promise<string> {
    const env = { ...process.env, ETCDCTL_API: '3' };
    const common = [`--endpoints=${this.endpoint(via)}`, '--command-timeout=1800s', '--dial-timeout=10s'];
    return run('etcdctl', [...common, ...args], { env, timeoutMs: this.options.readyTimeoutMs }).catch((error: Error) => {
      throw new AnswerError(0, error.message, `etcdctl ${args.join(' ')}`);
    });
  }

  private endpoint(name: string): string {
    return `127.0.0.1:${this.member(name).clientPort}`;
  }

  private member(name: string): EtcdScaleMember {
    const member = this.options.members.find((m) => m.name === name);
    if (member === undefined) throw new Error(`no etcd member ${name}`);
    return member;
  }
}
