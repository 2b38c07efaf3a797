// A 3-member etcd cell on loopback for same-run comparisons: its own temp data directories and free
// ports, default durability (fsync on), stopped (SIGTERM, then SIGKILL) by stopAll.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { httpsRequest } from '../node/testing/cell-tls.js';

export interface EtcdMember {
  readonly name: string;
  readonly clientPort: number;
  readonly peerPort: number;
}

/**
 * TLS for every listener of an etcd cell (the bench's etcd-tls reference): the members' server and
 * peer certificate (one, with IP:127.0.0.1; security/certs.ts issueMemberCert), the CA they trust,
 * client certificates required (--client-cert-auth, --peer-client-cert-auth), and the client
 * certificate this process's health probes present.
 */
export interface EtcdTls {
  readonly ca: string;
  readonly member: (name: string) => { readonly cert: string; readonly key: string };
  readonly client: { readonly cert: string; readonly key: string };
}

export const etcdInstallHint =
  'etcd is not installed. On Debian/Ubuntu (as root): ' +
  'apt-get update && apt-get install -y etcd-server etcd-client';

/** The `etcd --version` first line, or null when no etcd binary is on PATH. */
export function etcdVersion(binary = 'etcd'): string | null {
  const result = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  if (result.status !== 0 || typeof result.stdout !== 'string') return null;
  return result.stdout.split('\n')[0]?.trim() ?? null;
}

export class EtcdCell {
  private readonly processes = new Map<string, ChildProcess>();
  private readonly logs = new Map<string, string[]>();

  constructor(
    private readonly dataDir: string,
    readonly members: readonly EtcdMember[],
    private readonly binary = 'etcd',
    private readonly tls: EtcdTls | null = null,
  ) {}

  private get scheme(): string {
    return this.tls === null ? 'http' : 'https';
  }

  clientUrls(): URL[] {
    return this.members.map((m) => new URL(`${this.scheme}://127.0.0.1:${m.clientPort}`));
  }

  private tlsFlags(name: string): string[] {
    if (this.tls === null) return [];
    const own = this.tls.member(name);
    return [
      '--cert-file', own.cert, '--key-file', own.key, '--trusted-ca-file', this.tls.ca, '--client-cert-auth',
      '--peer-cert-file', own.cert, '--peer-key-file', own.key, '--peer-trusted-ca-file', this.tls.ca, '--peer-client-cert-auth',
    ];
  }

  startAll(): void {
    const initialCluster = this.members
      .map((m) => `${m.name}=${this.scheme}://127.0.0.1:${m.peerPort}`)
      .join(',');
    for (const member of this.members) {
      const dir = join(this.dataDir, member.name);
      mkdirSync(dir, { recursive: true });
      const client = `${this.scheme}://127.0.0.1:${member.clientPort}`;
      const peer = `${this.scheme}://127.0.0.1:${member.peerPort}`;
      const child = spawn(this.binary, [
        ...this.tlsFlags(member.name),
        '--name', member.name,
        '--data-dir', dir,
        '--listen-client-urls', client,
        '--advertise-client-urls', client,
        '--listen-peer-urls', peer,
        '--initial-advertise-peer-urls', peer,
        '--initial-cluster', initialCluster,
        '--initial-cluster-state', 'new',
        '--initial-cluster-token', `bench-${process.pid}`,
        '--logger', 'zap',
        '--log-level', 'warn',
      ], { stdio: ['ignore', 'pipe', 'pipe'] });
      const log: string[] = [];
      this.logs.set(member.name, log);
      const collect = (chunk: Buffer): void => {
        log.push(chunk.toString('utf8'));
        if (log.length > 500) log.splice(0, log.length - 500);
      };
      child.stdout?.on('data', collect);
      child.stderr?.on('data', collect);
      this.processes.set(member.name, child);
    }
  }

  /** Polls every member's /health until all report healthy (a leader and a quorum). */
  async waitReady(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const healthy = await Promise.all(this.clientUrls().map((url) => probeHealth(url, this.tls)));
      if (healthy.every(Boolean)) return;
      for (const [name, child] of this.processes) {
        if (child.exitCode !== null || child.signalCode !== null) {
          const tail = (this.logs.get(name) ?? []).join('').slice(-2000);
          throw new Error(`etcd ${name} exited: ${tail}`);
        }
      }
      if (Date.now() > deadline) throw new Error(`etcd cell not healthy within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  async stopAll(timeoutMs = 5_000): Promise<void> {
    await Promise.all([...this.processes.values()].map((child) => stopChild(child, timeoutMs)));
  }
}

async function probeHealth(url: URL, tls: EtcdTls | null): Promise<boolean> {
  try {
    if (tls !== null) {
      const answer = await httpsRequest(new URL('/health', url).href, { ca: tls.ca, client: tls.client, timeoutMs: 1000 });
      return answer.status === 200 && (JSON.parse(answer.body) as { health?: string }).health === 'true';
    }
    const res = await fetch(new URL('/health', url), { signal: AbortSignal.timeout(1000) });
    const body = (await res.json()) as { health?: string };
    return res.status === 200 && body.health === 'true';
  } catch {
    return false;
  }
}

/** SIGTERM, then SIGKILL after the timeout; resolves once the process has exited. */
export async function stopChild(child: ChildProcess, timeoutMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
}
