// Real-process cells for tests: free loopback ports, fault proxies between every ordered pair of
// members (so a test can cut A->B without touching B->A), and small HTTP helpers.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessCell } from '../../src/node/testing/process-cell.js';
import { Router } from '../../src/router/router.js';

/**
 * Free loopback ports for a test cell, drawn at random below the kernel's ephemeral range
 * (32768 and up here): ports the kernel hands out for port 0 and for outbound connections are
 * the ones other tests running at the same time are also handed, so drawing from there collides
 * more often (CI saw another cell's node answer on a port given to this one).
 */
export async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let tries = 0; ports.length < count; tries++) {
    if (tries > count * 50) throw new Error(`no ${count} free loopback ports found in 20000-32767`);
    const port = 20_000 + Math.floor(Math.random() * 12_768);
    if (ports.includes(port) || !(await canListen(port))) continue;
    ports.push(port);
  }
  return ports;
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server: Server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A TCP relay that can be cut: while blocked it drops every connection, new and existing. */
export class FaultProxy {
  private blocked = false;
  /** Sockets a blackhole holds (null: none in force). */
  private held: Set<Socket> | null = null;
  private readonly sockets = new Set<Socket>();
  private constructor(private readonly server: Server) {}

  static async start(listenPort: number, targetPort: number): Promise<FaultProxy> {
    const server = createServer();
    const proxy = new FaultProxy(server);
    server.on('connection', (client) => proxy.relay(client, targetPort));
    await new Promise<void>((resolve) => server.listen(listenPort, '127.0.0.1', resolve));
    return proxy;
  }

  private relay(client: Socket, targetPort: number): void {
    if (this.blocked) {
      client.destroy();
      return;
    }
    if (this.held !== null) {
      this.hold(client);
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  block(): void {
    this.blocked = true;
    for (const socket of this.sockets) socket.destroy();
  }

  /**
   * Drops every byte both ways without closing anything, as a partition that loses packets does:
   * connections stay open and silent (new ones too), so the callers' own timeouts must fire.
   */
  blackhole(): void {
    this.held ??= new Set();
    for (const socket of this.sockets) this.hold(socket);
  }

  unblock(): void {
    this.blocked = false;
    // What a partition held dies with it (the peer's TCP gives up on it in the end); callers reconnect.
    for (const socket of this.held ?? []) socket.destroy();
    this.held = null;
  }

  private hold(socket: Socket): void {
    socket.unpipe();
    socket.pause();
    socket.on('error', () => {});
    this.held?.add(socket);
  }

  async close(): Promise<void> {
    this.block();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

export interface TestCell {
  readonly cell: ProcessCell;
  readonly names: string[];
  /** Nodes outside the initial cluster (n4, ...), to be added with `member add` and started with join. */
  readonly spares: string[];
  readonly dataDir: string;
  /**
   * Registers a fresh node (the next free name, never one used before) outside the cell, not
   * started: its own ports and, in a cell with proxies, links through proxies too: one to each
   * of `among` (the members it will dial), and one shared inbound link that every member reaches
   * it through (its advertised peer URL), so isolating it cuts it off, and a partition that puts
   * it on either side cuts all of its inbound messages (harsher than a true partition).
   */
  addNode(among: readonly string[]): Promise<string>;
  /** Cut every link to and from `name` (both directions), or restore them all. */
  isolate(name: string): void;
  /** Cut every link between group `a` and group `b` (both directions); others keep theirs. */
  partition(a: readonly string[], b: readonly string[]): void;
  healAll(): void;
  close(): Promise<void>;
}

export interface TestCellOptions {
  size?: number;
  proxies?: boolean;
  extraArgs?: string[];
  nodeArgs?: (name: string) => string[];
  /** Flags for one node (given its name and the cell's data directory), e.g. its own --audit-log. */
  argsFor?: (name: string, dataDir: string) => string[];
  grpc?: boolean;
  /** Spare nodes (not started) that a test may add to the cell. */
  spares?: number;
  /** TLS on every listener and between members, certificates in <dataDir>/certs (ProcessCell.tls). */
  tls?: boolean;
  /** With tls: false leaves out --client-cert-auth (a client without a certificate is anonymous). */
  clientCertAuth?: boolean;
  /** With tls: the CA to issue the cell's certificates from (copied in), so several cells (and a router) trust each other. */
  tlsCa?: { readonly cert: string; readonly key: string };
  /** The CLI each member runs, asked at each (re)start (ProcessCellOptions.cliPathFor). */
  cliPathFor?: (name: string) => string;
}

/**
 * Cells not closed by the time the test file's process exits (a teardown that only stopped them,
 * a test that failed before its finally): their members are killed and their data directories
 * removed here, so a run leaves no cell's ~250 MB behind in the temp directory (a suite run used
 * to leave about 40).
 */
const leftBehind = new Map<string, () => ProcessCell | undefined>();
process.once('exit', () => {
  for (const [dataDir, cellOf] of leftBehind) {
    try {
      const cell = cellOf();
      for (const name of cell?.memberNames() ?? []) cell?.signal(name, 'SIGKILL');
    } catch {
      // the cell was never made (its constructor threw): nothing runs
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
});

/**
 * Starts a cell on free ports. A port found free can be taken by another test running at the same
 * time before a node binds it (EADDRINUSE): then the cell starts again on other ports.
 */
export async function startTestCell(options: TestCellOptions = {}): Promise<TestCell> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startTestCellOnce(options);
    } catch (error) {
      // Another process can take a port between freePorts() and the node's listen: the node
      // says "is already in use" (its own message for EADDRINUSE), or waitReady finds another
      // cell's node answering on one of our ports before ours has died; start again on new ports.
      const message = String((error as Error)?.message);
      const portTaken = ['EADDRINUSE', 'already in use', "not this cell's nodes"].some((sign) => message.includes(sign));
      if (attempt >= 3 || !portTaken) throw error;
    }
  }
}

async function startTestCellOnce(options: TestCellOptions): Promise<TestCell> {
  const size = options.size ?? 3;
  const names = Array.from({ length: size }, (_, i) => `n${i + 1}`);
  const spareNames = Array.from({ length: options.spares ?? 0 }, (_, i) => `n${size + i + 1}`);
  const ports = await freePorts(size * 3 + (options.proxies === true ? size * size : 0) + spareNames.length * 2);
  // grpc: each node also serves the etcd gRPC facade (member.grpcPort).
  const members = names.map((name, i) => ({
    name,
    clientPort: ports[i] as number,
    peerPort: ports[size + i] as number,
    ...(options.grpc === true ? { grpcPort: ports[size * 2 + i] as number } : {}),
  }));
  const proxies = new Map<string, FaultProxy>();
  if (options.proxies === true) {
    let next = size * 3;
    for (const from of members) {
      for (const to of members) {
        if (from === to) continue;
        proxies.set(`${from.name}->${to.name}`, await FaultProxy.start(ports[next++] as number, to.peerPort));
      }
    }
  }
  const sparePortsAt = size * 3 + (options.proxies === true ? size * size : 0);
  const spares = spareNames.map((name, i) => ({
    name,
    clientPort: ports[sparePortsAt + 2 * i] as number,
    peerPort: ports[sparePortsAt + 2 * i + 1] as number,
  }));
  const proxyPort = (from: string, to: string): number => (proxies.get(`${from}->${to}`) as FaultProxy).port;
  // Each node's --peer-dial: the initial members dial each other through the proxies; nodes added
  // later get theirs in addNode.
  const dials = new Map<string, Map<string, number>>();
  // Rendered per start, for the members that start lists: a member removed since (a node added
  // later dialled it through a proxy) is no longer in a rejoining node's --initial-cluster, and
  // the node refuses a --peer-dial naming a member it does not list (history 21017: the re-added
  // learner exited at once, and the leader saw it at match 0 for the whole step).
  const dialArgs = (name: string, listed: readonly string[]): string[] => {
    const dial = [...(dials.get(name) ?? [])].filter(([other]) => listed.includes(other));
    return dial.length === 0 ? [] : ['--peer-dial', dial.map(([other, port]) => `${other}=127.0.0.1:${port}`).join(',')];
  };
  const realPeerPorts = new Map<string, number>([...members, ...spares].map((m) => [m.name, m.peerPort]));
  if (options.proxies === true) {
    for (const name of names) {
      dials.set(name, new Map(names.filter((n) => n !== name).map((n) => [n, proxyPort(name, n)])));
    }
  }
  let lastNumber = size + spareNames.length;
  const dataDir = mkdtempSync(join(tmpdir(), 'baton-cell-'));
  leftBehind.set(dataDir, () => cell);
  if (options.tls === true && options.tlsCa !== undefined) {
    // CellTls (ensureCa) takes the CA it finds in its directory.
    mkdirSync(join(dataDir, 'certs'), { recursive: true, mode: 0o700 });
    copyFileSync(options.tlsCa.cert, join(dataDir, 'certs', 'ca.pem'));
    copyFileSync(options.tlsCa.key, join(dataDir, 'certs', 'ca-key.pem'));
  }
  const cell = new ProcessCell({
    dataDir,
    members,
    spares,
    ...(options.tls === true ? { tlsDir: join(dataDir, 'certs') } : {}),
    ...(options.clientCertAuth === false ? { clientCertAuth: false } : {}),
    extraArgs: ['--tick-ms', '50', '--election-ticks', '10', '--request-timeout-ms', '3000', ...(options.extraArgs ?? [])],
    ...(options.nodeArgs !== undefined ? { nodeArgs: options.nodeArgs } : {}),
    ...(options.cliPathFor !== undefined ? { cliPathFor: options.cliPathFor } : {}),
    argsFor: (name: string, listed: readonly string[]) => [...dialArgs(name, listed), ...(options.argsFor?.(name, dataDir) ?? [])],
  });
  cell.startAll();
  try {
    await cell.waitReady(30_000);
  } catch (error) {
    await cell.stopAll();
    await Promise.all([...proxies.values()].map((p) => p.close()));
    rmSync(dataDir, { recursive: true, force: true });
    leftBehind.delete(dataDir);
    throw error;
  }
  return {
    cell,
    names,
    spares: spareNames,
    dataDir,
    async addNode(among) {
      const name = `n${++lastNumber}`;
      if (options.proxies !== true) {
        const [clientPort, peerPort] = (await freePorts(2)) as [number, number];
        cell.addNode({ name, clientPort, peerPort });
        realPeerPorts.set(name, peerPort);
        return name;
      }
      const [clientPort, peerPort, inboundPort, ...outPorts] = (await freePorts(3 + among.length)) as number[] as [number, number, number, ...number[]];
      proxies.set(`*->${name}`, await FaultProxy.start(inboundPort, peerPort));
      const dial = new Map<string, number>();
      for (const [i, other] of among.entries()) {
        const port = outPorts[i] as number;
        proxies.set(`${name}->${other}`, await FaultProxy.start(port, realPeerPorts.get(other) as number));
        dial.set(other, port);
      }
      dials.set(name, dial);
      realPeerPorts.set(name, peerPort);
      cell.addNode({ name, clientPort, peerPort, advertisedPeerPort: inboundPort });
      return name;
    },
    isolate(name) {
      for (const [link, proxy] of proxies) if (link.split('->').includes(name)) proxy.block();
    },
    partition(a, b) {
      for (const [link, proxy] of proxies) {
        const [from, to] = link.split('->') as [string, string];
        // A shared inbound link (a node added later): cut whole when its node is on either side.
        if (from === '*' && (a.includes(to) || b.includes(to))) proxy.block();
        if ((a.includes(from) && b.includes(to)) || (b.includes(from) && a.includes(to))) proxy.block();
      }
    },
    healAll() {
      for (const proxy of proxies.values()) proxy.unblock();
    },
    async close() {
      await cell.killAll();
      await Promise.all([...proxies.values()].map((p) => p.close()));
      rmSync(dataDir, { recursive: true, force: true });
      leftBehind.delete(dataDir);
    },
  };
}

export interface HttpAnswer {
  readonly status: number;
  readonly body: any;
  readonly headers: Headers;
}

export async function http(url: string, init: RequestInit & { timeoutMs?: number } = {}): Promise<HttpAnswer> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(init.timeoutMs ?? 10_000) });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON (metrics)
  }
  return { status: res.status, body, headers: res.headers };
}

/** The leader's member name as some running member sees it (polls until one is known). */
export interface Member {
  id: number;
  name: string;
  role: 'voter' | 'learner';
}

/** The member list, read linearizably through `name`: between leaders (one just removed) it may have to wait. */
export async function listMembers(cell: TestCell, name: string): Promise<Member[]> {
  for (let attempt = 0; ; attempt++) {
    const answer = await http(`${cell.cell.clientUrl(name)}/v1/cluster/members`);
    if (answer.status === 503 && attempt < 40) {
      await sleep(250);
      continue;
    }
    if (answer.status !== 200) throw new Error(`member list through ${name}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body.members as Member[];
  }
}

export async function findLeader(cell: TestCell, among = cell.names, timeoutMs = 15_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const name of among) {
      if (!cell.cell.isRunning(name)) continue;
      try {
        const status = await http(`${cell.cell.clientUrl(name)}/v1/cluster/status`, { timeoutMs: 1000 });
        const leader = status.body.leader as number;
        // Members added later have ids that do not follow their names: look the name up.
        const members = status.body.members as { id: number; name: string }[];
        const leaderName = members.find((m) => m.id === leader)?.name ?? `n${leader}`;
        if (leader > 0 && among.includes(leaderName)) {
          const leaderStatus = await http(`${cell.cell.clientUrl(leaderName)}/v1/cluster/status`, { timeoutMs: 1000 });
          if (leaderStatus.body.leader === leader) return leaderName;
        }
      } catch {
        // not answering: try the next one
      }
    }
    await sleep(100);
  }
  throw new Error('no leader found');
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `promise`, or what `late` gives once `ms` have passed; the timer is cleared either way. (A race
 * against sleep(ms) leaves its timer pending, and a pending timer keeps the test file running
 * until it fires: up to 35 s per file.)
 */
export async function within<T, L>(promise: Promise<T>, ms: number, late: () => L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<L>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late());
      } catch (error) {
        reject(error);
      }
    }, ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A JSON POST for `http`, answered within `timeoutMs` (the control plane's calls wait on moves). */
export const postJson = (body: unknown, timeoutMs = 20_000): RequestInit & { timeoutMs: number } => ({
  method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' }, timeoutMs,
});

/**
 * PUT until the outcome is known, retrying timeouts and unavailability with the same Request-ID
 * (so a first attempt that committed late is not applied twice). Returns the answer body.
 */
export async function putSurely(url: string, body: string, attempts = 20): Promise<any> {
  const requestId = `put-${Math.random().toString(36).slice(2)}`;
  for (let attempt = 0; attempt < attempts; attempt++) {
    try {
      const res = await http(url, { method: 'PUT', body, headers: { 'Request-ID': requestId } });
      if (res.status === 200 || res.status === 201) return res.body;
      if (res.status !== 503 && res.status !== 504) throw new Error(`PUT ${url}: ${res.status} ${JSON.stringify(res.body)}`);
    } catch (error) {
      if (!(error instanceof Error) || !/timeout|fetch failed|aborted/i.test(error.message + String(error.cause))) throw error;
    }
    await sleep(200);
  }
  throw new Error(`PUT ${url}: no definite answer after ${attempts} attempts`);
}

/**
 * Adds data cells to a control plane (POST /v1/control/cells) and waits until each has taken the
 * cell map (`pending` empty), asking again every 200 ms for up to 10 s per cell.
 */
export async function registerCells(controlUrl: string, cells: Iterable<readonly [string, TestCell]>): Promise<void> {
  for (const [id, cell] of cells) {
    for (let attempt = 1; ; attempt++) {
      const added = await http(`${controlUrl}/v1/control/cells`, {
        method: 'POST', body: JSON.stringify({ id, endpoints: cell.cell.clientUrls() }), headers: { 'content-type': 'application/json' },
      });
      if (added.status === 200 && added.body.pending.length === 0) break;
      if (attempt >= 50) throw new Error(`cell ${id} never took the map: ${added.status} ${JSON.stringify(added.body)}`);
      await sleep(200);
    }
  }
}

/**
 * Moves `prefix` to cell `to` through the control plane and waits until the move is released and
 * cleaned (polled every 100 ms, up to `polls` times); an aborted move fails at once.
 */
export async function moveAndWait(controlUrl: string, prefix: string, to: string, polls = 300): Promise<void> {
  const post = { method: 'POST', body: JSON.stringify({ prefix, to }), headers: { 'content-type': 'application/json' } };
  const started = await http(`${controlUrl}/v1/control/moves`, post);
  if (started.status !== 200) throw new Error(`the move of ${prefix} to ${to} was refused: ${started.status} ${JSON.stringify(started.body)}`);
  let move: { phase: string; cleaned?: boolean } = started.body.move;
  for (let poll = 0; poll < polls && !(move.phase === 'released' && move.cleaned === true); poll++) {
    await sleep(100);
    move = (await http(`${controlUrl}/v1/control/namespaces${prefix}`)).body.move;
    if (move.phase === 'aborted') throw new Error(`the move of ${prefix} aborted: ${JSON.stringify(move)}`);
  }
  if (move.phase !== 'released') throw new Error(`the move of ${prefix} did not finish: ${JSON.stringify(move)}`);
}

/** The first answer below 500 from any member of `cell` (one may be killed): up to 20 s of rounds. */
export async function anyMember(cell: TestCell, path: string, init?: RequestInit): Promise<HttpAnswer> {
  for (let round = 0; round < 200; round++) {
    for (const url of cell.cell.clientUrls()) {
      try {
        const answer = await http(`${url}${path}`, { ...init, timeoutMs: 3_000 });
        if (answer.status < 500) return answer;
      } catch {
        // a killed member: the next one
      }
    }
    await sleep(100);
  }
  throw new Error(`no member answered ${path}`);
}

/**
 * A control plane (`--cell control --control-plane`, `controlSize` members) and two data cells
 * (`cell-1`, `cell-2`; one member each unless their options say otherwise), started at once and
 * registered with the control plane.
 */
export async function startTwoCells(options: { controlSize?: number; cell1?: TestCellOptions; cell2?: TestCellOptions } = {}): Promise<[TestCell, TestCell, TestCell]> {
  const dataCell = (id: string, extra: TestCellOptions = {}): Promise<TestCell> =>
    startTestCell({ size: 1, ...extra, extraArgs: ['--cell', id, ...(extra.extraArgs ?? [])] });
  const started = await Promise.all([
    startTestCell({ size: options.controlSize ?? 1, extraArgs: ['--cell', 'control', '--control-plane'] }),
    dataCell('cell-1', options.cell1),
    dataCell('cell-2', options.cell2),
  ]);
  await registerCells(started[0].cell.clientUrls()[0] as string, [['cell-1', started[1]], ['cell-2', started[2]]]);
  return started;
}

/**
 * A plain-HTTP router on a free loopback port in front of `control`'s cell map, started once it
 * read the map (and, with `knows`, once the map it read has that namespace).
 */
export async function startRouter(control: TestCell, options: { knows?: string } = {}): Promise<{ router: Router; url: string }> {
  const [port] = await freePorts(1);
  const router = new Router({ control: control.cell.clientUrls(), host: '127.0.0.1', port: port as number });
  const { url } = await router.start();
  if (!(await router.cache.ready(10_000))) throw new Error('the router never read the cell map');
  const known = options.knows;
  if (known !== undefined) await until(`the router knows ${known}`, () => router.cache.namespaces().has(known));
  return { router, url };
}

/** Polls `check` every 50 ms until it holds; fails naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
