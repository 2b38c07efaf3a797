// A cell on test "hosts" (netns.ts): one `baton server` per network namespace, listening only on
// its host's address, as a RollCell (test/faults/roll.ts) so the rolling restart procedure runs
// across three network stacks exactly as on loopback. The network goes away with the cell.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RollCell } from '../faults/roll.js';
import { http, sleep, within } from './harness.js';
import { createTestNetwork, type TestHost } from './netns.js';

export function netnsRollCell(count: number): (cliFor: (name: string) => string) => Promise<RollCell> {
  return async (cliFor) => {
    const network = createTestNetwork(count);
    const dataDir = mkdtempSync(join(tmpdir(), 'baton-hosts-'));
    const hosts = new Map<string, TestHost>(network.hosts.map((h) => [h.name, h]));
    const processes = new Map<string, { child: ChildProcess; exited: Promise<number | string>; log: string[] }>();
    const clientUrl = (name: string): string => `http://${hosts.get(name)!.address}:2379`;
    const cluster = network.hosts.map((h) => `${h.name}=http://${h.address}:2380`).join(',');
    const clients = network.hosts.map((h) => `${h.name}=${clientUrl(h.name)}`).join(',');
    const start = (name: string, cli: string): void => {
      const host = hosts.get(name)!;
      const child = spawn('ip', ['netns', 'exec', host.namespace, process.execPath, cli, 'server',
        '--name', name, '--data-dir', join(dataDir, name),
        '--listen-client', clientUrl(name), '--listen-peer', `http://${host.address}:2380`,
        '--initial-cluster', cluster, '--initial-cluster-clients', clients,
        '--tick-ms', '50', '--election-ticks', '10', '--request-timeout-ms', '3000'], { stdio: ['ignore', 'pipe', 'pipe'] });
      const log: string[] = [];
      child.stdout!.on('data', (chunk: Buffer) => log.push(chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => log.push(chunk.toString()));
      const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
      processes.set(name, { child, exited, log });
    };
    const isRunning = (name: string): boolean => {
      const child = processes.get(name)?.child;
      return child !== undefined && child.exitCode === null && child.signalCode === null;
    };
    const names = network.hosts.map((h) => h.name);
    for (const name of names) start(name, cliFor(name));
    const cell: RollCell = {
      names,
      clientUrl,
      isRunning,
      signal: (name, signal) => void processes.get(name)?.child.kill(signal),
      async waitExit(name, timeoutMs) {
        const running = processes.get(name);
        if (running === undefined) return -1;
        return within(running.exited, timeoutMs, () => {
          throw new Error(`${name} still running after ${timeoutMs} ms`);
        });
      },
      start,
      async waitReady(timeoutMs, among) {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          for (const name of among) {
            if (!isRunning(name)) throw new Error(`${name} exited: ${processes.get(name)?.log.join('').slice(-2000)}`);
          }
          const answers = await Promise.all(among.map((name) => http(`${clientUrl(name)}/readyz`, { timeoutMs: 1_000 }).catch(() => null)));
          if (answers.every((a) => a?.status === 200)) return;
          if (Date.now() > deadline) throw new Error(`not ready within ${timeoutMs} ms: ${among.join(', ')}`);
          await sleep(100);
        }
      },
      async close() {
        for (const name of names) if (isRunning(name)) processes.get(name)!.child.kill('SIGKILL');
        await Promise.all([...processes.values()].map((p) => p.exited));
        network.remove();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
    try {
      await cell.waitReady(30_000, names);
    } catch (error) {
      await cell.close();
      throw error;
    }
    return cell;
  };
}
