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

/** TCP sockets (IPv4 and IPv6 tables) in one of `states` whose local port is `port`. */
function socketsOnPort(port: number, states: readonly string[]): { inode: string; state: string }[] {
  const found: { inode: string; state: string }[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!existsSync(table)) continue;
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      const state = fields[3];
      const inode = fields[9];
      if (local === undefined || state === undefined || inode === undefined) continue;
      if (parseInt(local.split(':')[1] ?? '', 16) === port && states.includes(state)) found.push({ inode, state });
    }
  }
  return found;
}

/** Connections the node has open on its client-facing ports (established or closing), or null. */
export function connectionCount(node: FuzzNode): number | null {
  if (!existsSync('/proc/net/tcp')) return null;
  // 01 ESTABLISHED, 08 CLOSE_WAIT (the peer closed, the node has not yet): the node holds both.
  return [node.httpPort, node.grpcPort].reduce((sum, port) => sum + socketsOnPort(port, ['01', '08']).length, 0);
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
