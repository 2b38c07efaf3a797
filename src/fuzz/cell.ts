// The cell a fuzz run attacks: real node processes (ProcessCell) on free loopback ports, a fresh
// data directory, the etcd gRPC facade on every node; and what the run measures of it from the
// outside (Linux /proc): each node's resident memory and the TCP connections to its ports.
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessCell } from '../node/testing/process-cell.js';

export interface FuzzNode {
  readonly name: string;
  readonly httpPort: number;
  readonly grpcPort: number;
}

export interface FuzzCell {
  readonly cell: ProcessCell;
  readonly nodes: readonly FuzzNode[];
  readonly dataDir: string;
  stop(): Promise<void>;
}

/** Ports free right now on 127.0.0.1 (another process may take one before a node binds it). */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  const ports: number[] = [];
  for (let i = 0; i < count; i++) {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    ports.push((server.address() as { port: number }).port);
  }
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

export async function startFuzzCell(options: { members: number; readyTimeoutMs: number }): Promise<FuzzCell> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startFuzzCellOnce(options);
    } catch (error) {
      if (attempt >= 3 || !String((error as Error)?.message).includes('EADDRINUSE')) throw error;
    }
  }
}

async function startFuzzCellOnce(options: { members: number; readyTimeoutMs: number }): Promise<FuzzCell> {
  const size = options.members;
  const ports = await freePorts(size * 3);
  const members = Array.from({ length: size }, (_, i) => ({
    name: `n${i + 1}`,
    clientPort: ports[i] as number,
    peerPort: ports[size + i] as number,
    grpcPort: ports[2 * size + i] as number,
  }));
  const dataDir = mkdtempSync(join(tmpdir(), 'baton-fuzz-'));
  const cell = new ProcessCell({ dataDir, members, host: '127.0.0.1', output: 'pipe' });
  const stop = async (): Promise<void> => {
    await cell.stopAll();
    rmSync(dataDir, { recursive: true, force: true });
  };
  cell.startAll();
  try {
    await cell.waitReady(options.readyTimeoutMs);
  } catch (error) {
    const tails = members.map((m) => `${m.name}: ${cell.tail(m.name, 5)}`).join('\n');
    await stop();
    throw new Error(`${(error as Error).message}\n${tails}`);
  }
  const nodes = members.map((m) => ({ name: m.name, httpPort: m.clientPort, grpcPort: m.grpcPort }));
  return { cell, nodes, dataDir, stop };
}

// ---------------------------------------------------------------------------------------------
// Measurements from /proc (Linux); elsewhere they read as null and are reported, not checked.

interface TcpEntry {
  readonly local: string;
  readonly remote: string;
  readonly state: string;
  readonly inode: string;
}

function tcpTable(): TcpEntry[] {
  const entries: TcpEntry[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!existsSync(table)) continue;
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [local, remote, state, inode] = [fields[1], fields[2], fields[3], fields[9]];
      if (local === undefined || remote === undefined || state === undefined || inode === undefined) continue;
      entries.push({ local, remote, state, inode });
    }
  }
  return entries;
}

function portOf(address: string): number {
  return parseInt(address.split(':')[1] ?? '', 16);
}

/** TCP sockets (IPv4 and IPv6 tables) in one of `states` whose local port is `port`. */
function socketsOnPort(port: number, states: readonly string[]): TcpEntry[] {
  return tcpTable().filter((entry) => portOf(entry.local) === port && states.includes(entry.state));
}

/** Inodes of the sockets the processes `pids` hold. */
function socketInodesOf(pids: readonly (number | null)[]): Set<string> {
  const inodes = new Set<string>();
  for (const pid of pids) {
    if (pid === null) continue;
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (match !== null) inodes.add(match[1] as string);
      } catch {
        // The fd closed meanwhile.
      }
    }
  }
  return inodes;
}

/**
 * Connections the node holds on its client-facing ports (established, or closed by the peer and
 * not yet by the node) from anything but the cell's own nodes, or null where /proc is missing.
 * The nodes' own connections to each other (forwarded keepalives, kept alive by their pools)
 * are the cell's business, not a client's leak.
 */
export function connectionCount(node: FuzzNode, nodePids: readonly (number | null)[]): number | null {
  if (!existsSync('/proc/net/tcp')) return null;
  const table = tcpTable();
  const internal = socketInodesOf(nodePids);
  const ports = [node.httpPort, node.grpcPort];
  // 01 ESTABLISHED, 08 CLOSE_WAIT.
  const held = table.filter((entry) => ports.includes(portOf(entry.local)) && (entry.state === '01' || entry.state === '08'));
  return held.filter((entry) => {
    const peer = table.find((other) => other.local === entry.remote && other.remote === entry.local);
    return peer === undefined || !internal.has(peer.inode);
  }).length;
}

/** The pid of the process listening on `port` (found through the listening socket's inode). */
export function listenerPid(port: number): number | null {
  const listening = socketsOnPort(port, ['0A'])[0];
  if (listening === undefined) return null;
  const target = `socket:[${listening.inode}]`;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${entry}/fd/${fd}`) === target) return Number(entry);
      } catch {
        // The fd closed meanwhile.
      }
    }
  }
  return null;
}

/** Resident memory of a process in bytes, or null. */
export function residentBytes(pid: number | null): number | null {
  if (pid === null) return null;
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? null : Number(match[1]) * 1024;
  } catch {
    return null;
  }
}
