// The scale bench's Baton cell: the data path over the native HTTP API (`POST /v1/txn`, up to 128
// puts or deletes per transaction, JSON with the ASCII value as text), members from a process
// harness (ProcessCell satisfies `MemberProcesses`; src/bench may not import src/node), member
// changes through `/v1/cluster/members` (docs/api/members.md) and backups by `baton snapshot save`.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { closeEndpoints, openEndpoints, send, type Endpoint } from './http-client.js';
import { fileBytes } from './host-stats.js';
import { findPids } from './proc-cpu.js';
import { batonProtocol } from './protocols.js';
import { overScaleKeys, scaleKey, scaleValue } from './scale-keys.js';
import {
  AnswerError, connectionFailure, pollUntil, run, sleep,
  type BackupFigures, type ReplaceTimings, type ScaleCell,
} from './scale-cell.js';

/** What the bench needs of the process harness (src/node/testing/process-cell.ts has it all). */
export interface MemberProcesses {
  clientUrl(name: string): string;
  peerUrl(name: string): string;
  names(): string[];
  dataDirOf(name: string): string;
  start(name: string, options?: { join?: boolean }): void;
  signal(name: string, signal: NodeJS.Signals): void;
  waitExit(name: string, timeoutMs?: number): Promise<number | string>;
  tail(name: string, lines?: number): string;
  stopAll(timeoutMs?: number): Promise<void>;
}

interface Member { id: number; name: string; role: string }

const valueText = scaleValue.toString('latin1');
const probeKey = scaleKey(0);

export class BatonScaleCell implements ScaleCell {
  readonly system = 'baton' as const;
  readonly protocol = overScaleKeys(batonProtocol);
  readonly dataPath = 'native HTTP/1.1 JSON, POST /v1/txn';
  readonly compactNote = 'answers at once; history is deleted 512 events per applied entry afterwards';
  private readonly endpoints: Endpoint[];

  constructor(
    private readonly processes: MemberProcesses,
    private readonly cliPath: string,
    workers: number,
    private readonly readyTimeoutMs: number,
  ) {
    this.endpoints = openEndpoints(this.clientUrls(), Math.max(workers, 3));
  }

  names(): string[] {
    return this.processes.names();
  }

  clientUrls(): URL[] {
    return this.names().map((name) => new URL(this.processes.clientUrl(name)));
  }

  async leader(): Promise<string> {
    return pollUntil('a Baton leader', this.readyTimeoutMs, 200, async () => {
      for (const name of this.names()) {
        const status = await this.json(name, 'GET', '/v1/cluster/status').catch(() => null) as
          { leader?: number; members?: Member[] } | null;
        const leader = status?.members?.find((m) => m.id === status.leader)?.name;
        if (leader !== undefined) return leader;
      }
      return null;
    });
  }

  pids(name: string): number[] {
    return findPids(`${this.processes.dataDirOf(name)}\u0000`);
  }

  dataDir(name: string): string {
    return this.processes.dataDirOf(name);
  }

  storeFile(name: string): string {
    return join(this.dataDir(name), 'db', 'state.mdb');
  }

  putTxn(keys: readonly string[], worker: number): Promise<void> {
    const ops = keys.map((key) => `{"put":{"key":${JSON.stringify(key)},"value":"${valueText}"}}`);
    return this.txn(ops, worker);
  }

  deleteTxn(keys: readonly string[], worker: number): Promise<void> {
    return this.txn(keys.map((key) => `{"delete":{"key":${JSON.stringify(key)}}}`), worker);
  }

  retryable(error: Error): string | null {
    if (error instanceof AnswerError && [429, 503, 504].includes(error.status)) return String(error.status);
    return connectionFailure(error);
  }

  async revision(): Promise<number> {
    const status = await this.json(await this.leader(), 'GET', '/v1/cluster/status') as { revision: number };
    return status.revision;
  }

  async compact(revision: number): Promise<void> {
    await this.json(await this.leader(), 'POST', '/v1/maintenance/compact', { revision });
  }

  async probe(name: string): Promise<string> {
    const base = this.processes.clientUrl(name);
    try {
      const ready = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(2000) });
      const body = await ready.json().catch(() => null) as { reason?: string } | null;
      if (ready.status !== 200) return `readyz ${ready.status} ${body?.reason ?? ''}`;
      const read = await fetch(`${base}/v1/kv${probeKey}?consistency=linearizable`, { signal: AbortSignal.timeout(5000) });
      await read.arrayBuffer();
      // 404 is an answer too: a linearizable read was served (the key may not be loaded yet).
      return read.status === 200 || read.status === 404 ? 'ready' : `linearizable get ${read.status}`;
    } catch (error) {
      return `no answer (${(error as Error).message})`;
    }
  }

  async stopMember(name: string, signal: NodeJS.Signals): Promise<void> {
    this.processes.signal(name, signal);
    await this.processes.waitExit(name, 60_000);
  }

  startMember(name: string): void {
    this.processes.start(name);
  }

  async replaceMember(name: string, onStep: (step: string) => void): Promise<ReplaceTimings> {
    const began = performance.now();
    const leader = await this.leader();
    if (leader === name) throw new Error(`replaceMember: ${name} leads; replace a follower`);
    const old = (await this.members(leader)).find((m) => m.name === name);
    if (old === undefined) throw new Error(`${name} is not a member`);
    await this.changeMembers(leader, 'DELETE', `/v1/cluster/members/${old.id}`);
    onStep(`removed ${name} (id ${old.id})`);
    rmSync(this.dataDir(name), { recursive: true, force: true });
    const added = await this.changeMembers(leader, 'POST', '/v1/cluster/members', {
      name, peerUrl: this.processes.peerUrl(name), clientUrl: this.processes.clientUrl(name),
    }) as { member: Member };
    onStep(`added ${name} back as learner ${added.member.id}, data wiped`);
    const removeAddSeconds = (performance.now() - began) / 1000;
    const started = performance.now();
    this.processes.start(name, { join: true });
    let promoteAttempts = 0;
    await pollUntil(`promoting ${name}`, this.readyTimeoutMs, 500, async () => {
      promoteAttempts++;
      const answer = await this.request(await this.leader(), 'POST', `/v1/cluster/members/${added.member.id}/promote`)
        .catch((error: Error) => ({ status: 0, text: error.message }));
      if (answer.status === 200) return true;
      if (answer.status !== 412 && answer.status !== 503 && answer.status !== 0) {
        throw new AnswerError(answer.status, answer.text, `promote ${name}`);
      }
      return null;
    }, () => this.processes.tail(name, 10));
    const promotedSeconds = (performance.now() - started) / 1000;
    onStep(`promoted ${name} after ${promotedSeconds.toFixed(1)} s (${promoteAttempts} attempts)`);
    await pollUntil(`${name} ready`, this.readyTimeoutMs, 100, async () =>
      (await this.probe(name)) === 'ready' ? true : null, () => this.processes.tail(name, 10));
    return { removeAddSeconds, promotedSeconds, readySeconds: (performance.now() - started) / 1000, promoteAttempts };
  }

  async backup(file: string, via: string): Promise<BackupFigures> {
    const began = performance.now();
    const args = [this.cliPath, 'snapshot', 'save', file, '--endpoints', this.processes.clientUrl(via), '--no-discover'];
    await run(process.execPath, args, { timeoutMs: this.readyTimeoutMs });
    return { seconds: (performance.now() - began) / 1000, bytes: fileBytes(file), tool: 'baton snapshot save' };
  }

  tail(name: string): string {
    return this.processes.tail(name, 30);
  }

  async stopAll(): Promise<void> {
    closeEndpoints(this.endpoints);
    await this.processes.stopAll(30_000);
  }

  private async txn(ops: string[], worker: number): Promise<void> {
    const body = Buffer.from(`{"compare":[],"success":[${ops.join(',')}],"failure":[]}`);
    const endpoint = this.endpoints[worker % this.endpoints.length] as Endpoint;
    const spec = { method: 'POST' as const, path: '/v1/txn', body, contentType: 'application/json' };
    const answer = await send(endpoint, spec, true, 30_000);
    if (answer.status !== 200) throw new AnswerError(answer.status, answer.body.toString('utf8'), 'txn');
  }

  private async members(via: string): Promise<Member[]> {
    return ((await this.json(via, 'GET', '/v1/cluster/members')) as { members: Member[] }).members;
  }

  /** A member change, retried while another change or a leader change is in the way. */
  private async changeMembers(via: string, method: string, path: string, body?: unknown): Promise<unknown> {
    const requestId = `scale-${process.pid}-${Date.now()}-${path}`;
    for (let attempt = 1; ; attempt++) {
      const answer = await this.request(via, method, path, body, requestId);
      if (answer.status === 200 || answer.status === 201) return JSON.parse(answer.text);
      if (attempt >= 60 || ![412, 503, 504].includes(answer.status)) throw new AnswerError(answer.status, answer.text, `${method} ${path}`);
      await sleep(250);
    }
  }

  private async json(name: string, method: string, path: string, body?: unknown): Promise<unknown> {
    const answer = await this.request(name, method, path, body);
    if (answer.status !== 200) throw new AnswerError(answer.status, answer.text, `${method} ${path}`);
    return JSON.parse(answer.text);
  }

  private async request(name: string, method: string, path: string, body?: unknown, requestId?: string):
    Promise<{ status: number; text: string }> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (requestId !== undefined) headers['request-id'] = requestId;
    const res = await fetch(`${this.processes.clientUrl(name)}${path}`, {
      method, headers, signal: AbortSignal.timeout(30_000),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, text: await res.text() };
  }
}
