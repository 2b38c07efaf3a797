// A cell of real node processes on this machine: used by `baton dev` (npm start) and by the
// multi-process tests, which kill (-9), pause (SIGSTOP) and restart single members.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CellTls, httpsRequest } from './cell-tls.js';

export interface CellMemberPorts {
  readonly name: string;
  readonly clientPort: number;
  readonly peerPort: number;
  /** The etcd gRPC facade's port; absent = not served. */
  readonly grpcPort?: number;
  /**
   * The peer port the cell knows this member by, when it differs from the one it listens on
   * (a test's fault proxy in front of it); absent = peerPort.
   */
  readonly advertisedPeerPort?: number;
}

export interface ProcessCellOptions {
  readonly dataDir: string;
  readonly members: readonly CellMemberPorts[];
  /** Nodes outside the initial cluster, started later to join it (`baton member add` first). */
  readonly spares?: readonly CellMemberPorts[];
  readonly host?: string;
  /** Extra flags for every node (e.g. ['--tick-ms', '50']). */
  readonly extraArgs?: readonly string[];
  /**
   * Extra flags for one node (e.g. its --peer-dial through a test's fault proxies). `listed`: the
   * members this start names in --initial-cluster (a node rejects a --peer-dial naming another).
   */
  readonly argsFor?: (name: string, listed: readonly string[]) => readonly string[];
  /** Flags for the node binary itself, before the script (e.g. ['--cpu-prof']). */
  readonly nodeArgs?: (name: string) => readonly string[];
  /** Where node output goes: 'inherit' for dev, 'pipe' (collected) for tests. */
  readonly output?: 'inherit' | 'pipe';
  /** TLS on every listener with certificates made in this directory (cell-tls.ts); absent: plain. */
  readonly tlsDir?: string;
  /**
   * With TLS: false leaves out --client-cert-auth, so a client without a certificate connects as
   * the anonymous principal (the authorization tests need one); default true.
   */
  readonly clientCertAuth?: boolean;
  /** With TLS: member files named `<cell>-<member>`, for cells sharing one tlsDir (cell-tls.ts). */
  readonly tlsFilesByCell?: boolean;
  /**
   * The CLI a member runs, asked at each start (a rolling-upgrade test starts some members from
   * another build's DIR/dist/src/cli/main.js and switches them one by one); absent: this build's.
   */
  readonly cliPathFor?: (name: string) => string;
}

/**
 * This build's CLI, dist/src/cli/main.js, found from this module whether it runs from tsc's output
 * (dist/src/node/testing: `npm test`) or bundled into the CLI itself (dist/src/cli: `baton dev`).
 */
function thisBuildsCli(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dirname(dir) !== dir; dir = dirname(dir)) {
    const candidate = join(dir, 'cli', 'main.js');
    if (basename(dir) === 'src' && existsSync(candidate)) return candidate;
  }
  throw new Error(`no src/cli/main.js above ${fileURLToPath(import.meta.url)}`);
}

const cliPath = thisBuildsCli();

export class ProcessCell {
  private readonly processes = new Map<string, ChildProcess>();
  /** When each member's current process was spawned (Date.now()): its node cannot be older. */
  private readonly spawnedAtMs = new Map<string, number>();
  readonly logs = new Map<string, string[]>();
  private readonly host: string;
  /** Nodes that join the running cell (--initial-cluster-state existing) when (re)started. */
  private readonly joining = new Set<string>();
  /**
   * Per joining node, the members whose client URLs it asks who it is (its --initial-cluster):
   * after the cell's membership drifted away from the initial members, those may all be gone.
   */
  private readonly joinVia = new Map<string, readonly string[]>();
  /** Nodes registered after the cell was made (addNode), like spares. */
  private readonly added: CellMemberPorts[] = [];
  /** The cell's certificates when it runs with TLS. */
  readonly tls: CellTls | null;
  private readonly scheme: 'http' | 'https';

  constructor(private readonly options: ProcessCellOptions) {
    this.host = options.host ?? '127.0.0.1';
    // The members' certificates name the cell they run as (`--cell`, else cell-1): peers check it.
    const cellFlag = options.extraArgs?.indexOf('--cell') ?? -1;
    const cell = cellFlag >= 0 ? options.extraArgs?.[cellFlag + 1] : undefined;
    this.tls = options.tlsDir === undefined ? null : new CellTls(options.tlsDir, cell ?? 'cell-1', options.tlsFilesByCell === true);
    this.scheme = this.tls === null ? 'http' : 'https';
  }

  clientUrl(name: string): string {
    return `${this.scheme}://${this.host}:${this.member(name).clientPort}`;
  }

  /** HOST:PORT of a member's etcd gRPC facade (etcd clients take endpoints without a scheme). */
  grpcEndpoint(name: string): string {
    const port = this.member(name).grpcPort;
    if (port === undefined) throw new Error(`${name} serves no etcd gRPC facade`);
    return `${this.host}:${port}`;
  }

  clientUrls(): string[] {
    return this.options.members.map((member) => this.clientUrl(member.name));
  }

  names(): string[] {
    return this.options.members.map((member) => member.name);
  }

  startAll(): void {
    for (const member of this.options.members) this.start(member.name);
  }

  /** The data directory of a member (a test may wipe it to re-add the member as a new one). */
  dataDirOf(name: string): string {
    return join(this.options.dataDir, name);
  }

  /** Peer URL of a member or spare, as `baton member add` takes it. */
  peerUrl(name: string): string {
    const member = this.member(name);
    return `${this.scheme}://${this.host}:${member.advertisedPeerPort ?? member.peerPort}`;
  }

  /** Registers one more node outside the initial cluster (a test's fresh spare), not started. */
  addNode(member: CellMemberPorts): void {
    if ([...this.options.members, ...(this.options.spares ?? []), ...this.added].some((m) => m.name === member.name)) {
      throw new Error(`${member.name} is already known`);
    }
    this.added.push(member);
  }

  /**
   * Starts a member. With `join`, it (and every later restart of it) joins the running cell
   * with --initial-cluster-state existing, which must have registered it (`member add`) first;
   * `via` names the running members it asks (default: the initial members).
   */
  /** `extraArgs`: flags for this start only, after all others (the last of a flag wins). */
  start(name: string, options: { join?: boolean; via?: readonly string[]; extraArgs?: readonly string[] } = {}): void {
    const member = this.member(name);
    if (options.join === true) this.joining.add(name);
    if (options.via !== undefined) this.joinVia.set(name, options.via);
    const dataDir = join(this.options.dataDir, name);
    mkdirSync(dataDir, { recursive: true });
    // A node of the initial cluster always starts with it (its id is its place in the list); a
    // joining node also lists the members it was told to ask (it tries each in turn).
    const via = this.joining.has(name) ? (this.joinVia.get(name) ?? []) : [];
    const base = via.map((other) => this.member(other));
    for (const m of this.options.members) if (!via.includes(m.name)) base.push(m);
    const listed = base.some((m) => m.name === name) ? base : [...base, member];
    const scheme = this.scheme;
    const initialCluster = listed
      .map((m) => `${m.name}=${scheme}://${this.host}:${m.advertisedPeerPort ?? m.peerPort}`)
      .join(',');
    const clients = listed.map((m) => `${m.name}=${scheme}://${this.host}:${m.clientPort}`).join(',');
    const grpc = this.options.members.filter((m) => m.grpcPort !== undefined);
    const grpcArgs = member.grpcPort === undefined ? [] : [
      '--listen-grpc', `${scheme}://${this.host}:${member.grpcPort}`,
      '--initial-cluster-grpc', grpc.map((m) => `${m.name}=${scheme}://${this.host}:${m.grpcPort}`).join(','),
    ];
    const args = [
      ...(this.options.nodeArgs?.(name) ?? []),
      this.options.cliPathFor?.(name) ?? cliPath,
      'server',
      '--name', name,
      '--data-dir', dataDir,
      '--listen-client', `${scheme}://${this.host}:${member.clientPort}`,
      '--listen-peer', `${scheme}://${this.host}:${member.peerPort}`,
      '--initial-cluster', initialCluster,
      '--initial-cluster-clients', clients,
      ...(this.joining.has(name) ? ['--initial-cluster-state', 'existing'] : []),
      ...grpcArgs,
      ...(this.tls?.flags(name).filter((flag) => flag !== '--client-cert-auth' || this.options.clientCertAuth !== false) ?? []),
      ...(this.options.extraArgs ?? []),
      ...(this.options.argsFor?.(name, listed.map((m) => m.name)) ?? []),
      ...(options.extraArgs ?? []),
    ];
    const output = this.options.output ?? 'pipe';
    this.spawnedAtMs.set(name, Date.now());
    const child = spawn(process.execPath, args, { stdio: ['ignore', output, output] });
    this.processes.set(name, child);
    if (output === 'pipe') {
      const log = this.logs.get(name) ?? [];
      this.logs.set(name, log);
      const collect = (chunk: Buffer): void => {
        log.push(chunk.toString('utf8'));
        if (log.length > 2000) log.splice(0, log.length - 2000);
      };
      child.stdout?.on('data', collect);
      child.stderr?.on('data', collect);
    }
  }

  isRunning(name: string): boolean {
    const child = this.processes.get(name);
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  /** The members started so far (running or not). */
  memberNames(): string[] {
    return [...this.processes.keys()];
  }

  signal(name: string, signal: NodeJS.Signals): void {
    this.processes.get(name)?.kill(signal);
  }

  /** Resolves with the exit code (or signal) once the member's process has ended. */
  async waitExit(name: string, timeoutMs = 10_000): Promise<number | string> {
    const child = this.processes.get(name);
    if (child === undefined) return 'not started';
    if (child.exitCode !== null) return child.exitCode;
    if (child.signalCode !== null) return child.signalCode;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name} did not exit within ${timeoutMs} ms`)), timeoutMs);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        resolve(code ?? signal ?? 'unknown');
      });
    });
  }

  async kill9(name: string): Promise<void> {
    this.signal(name, 'SIGKILL');
    await this.waitExit(name);
  }

  /** Kill -9 every member: a test's teardown, where nothing is kept and no stop needs to be graceful. */
  async killAll(): Promise<void> {
    await Promise.all([...this.processes.keys()].filter((name) => this.isRunning(name)).map((name) => this.kill9(name)));
  }

  /** Stop every member: SIGTERM, then SIGKILL for any that did not exit in time. */
  async stopAll(timeoutMs = 5_000): Promise<void> {
    const names = [...this.processes.keys()].filter((name) => this.isRunning(name));
    for (const name of names) {
      this.signal(name, 'SIGCONT');
      this.signal(name, 'SIGTERM');
    }
    await Promise.all(
      names.map(async (name) => {
        try {
          await this.waitExit(name, timeoutMs);
        } catch {
          await this.kill9(name);
        }
      }),
    );
  }

  /**
   * Polls every member's /readyz until all answer 200 (or the time runs out), then checks that each
   * answer came from this cell's own process (foreignNode): a cell already on these ports would
   * otherwise pass for this one while this one's nodes die on EADDRINUSE. Ready here means
   * serving reads: a learner counts (tests start learners and wait for them), and so does a member
   * holding a CORRUPT alarm (tests that damage a store check the alarm themselves).
   */
  async waitReady(timeoutMs = 20_000, names = this.names()): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const states = await Promise.all(names.map((name) => this.probe(`${this.clientUrl(name)}/readyz?exclude=non_learner&exclude=data_corruption`)));
      if (states.every((state) => state === 'ready')) {
        const problems = (await Promise.all(names.map((name) => this.foreignNode(name)))).filter((p) => p !== null);
        if (problems.length > 0) throw new Error(`not this cell's nodes: ${problems.join('; ')}`);
        const gone = names.filter((name) => !this.isRunning(name));
        if (gone.length === 0) return;
        throw new Error(`${gone.join(', ')} exited: ${this.tail(gone[0] as string)}`);
      }
      for (const name of names) {
        if (!this.isRunning(name)) throw new Error(`${name} exited: ${this.tail(name)}`);
      }
      if (Date.now() > deadline) {
        const said = names.map((name, i) => `${name}: ${states[i]}`).join(', ');
        throw new Error(`cell not ready within ${timeoutMs} ms (${said})`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  tail(name: string, lines = 20): string {
    return (this.logs.get(name) ?? []).join('').split('\n').slice(-lines).join('\n');
  }

  /** 'ready', or why not: the node's own reason, or that it did not answer. */
  private async probe(url: string): Promise<string> {
    try {
      const answer = await this.get(url);
      return answer.status === 200 ? 'ready' : failedChecks(answer.body, answer.status);
    } catch {
      return 'no answer';
    }
  }

  /**
   * Why the node answering at a member's client URL is not the one this cell started, or null.
   * Its status must name the member, and its process must be no older than the spawn (a second
   * `baton dev` on the same ports has the same names and cluster id, so only the age tells).
   */
  private async foreignNode(name: string): Promise<string | null> {
    try {
      return await this.foreignNodeAt(name, this.clientUrl(name));
    } catch {
      return null; // no answer now: the running-process check after this one decides
    }
  }

  private async foreignNodeAt(name: string, url: string): Promise<string | null> {
    const status = parseJson((await this.get(`${url}/v1/cluster/status`)).body) as
      { member?: number; members?: { id: number; name: string }[] } | null;
    const self = status?.members?.find((member) => member.id === status.member);
    if (self !== undefined && self.name !== name) return `${url} answers as member ${self.name}, not ${name}`;
    const metrics = (await this.get(`${url}/metrics`)).body;
    const started = Number(/^process_start_time_seconds (\S+)$/m.exec(metrics)?.[1] ?? NaN);
    // A second of slack for the metric's whole seconds and the clock's granularity.
    const spawned = Math.floor((this.spawnedAtMs.get(name) ?? 0) / 1000) - 1;
    if (started < spawned) {
      return `${url} is served by a process started at ${new Date(started * 1000).toISOString()}, before ${name} was `
        + 'started: another cell holds the port';
    }
    return null;
  }

  private async get(url: string): Promise<{ status: number; body: string }> {
    if (this.tls !== null) return httpsRequest(url, { ca: this.tls.ca.cert, client: this.tls.root, timeoutMs: 1000 });
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
    return { status: res.status, body: await res.text() };
  }

  private member(name: string): CellMemberPorts {
    const member = [...this.options.members, ...(this.options.spares ?? []), ...this.added].find((m) => m.name === name);
    if (member === undefined) throw new Error(`no member ${name}`);
    return member;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** The failed lines of a /readyz answer (etcd's `[-]<check> failed: <reason>`), else its status. */
function failedChecks(body: string, status: number): string {
  const failed = body.split('\n').filter((line) => line.startsWith('[-]'));
  return failed.length > 0 ? failed.join('; ') : `status ${status}`;
}
