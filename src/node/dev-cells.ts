// `baton dev --cells N` (docs/design/cells.md): a control-plane cell, N data cells (cell-1 ...
// cell-N) of 3 processes each, and one router, on this machine. Port layout from --base-port B
// (default 7000): the router on B; cell c (0 = the control plane, 1..N the data cells) has client
// ports B+10(c+1)+1..3, peer ports 100 above, gRPC ports 200 above (B=7000: control 7011-7013,
// cell-1 7021-7023, cell-2 7031-7033 ...). Data in DIR/control and DIR/cell-K. Once every cell is
// ready the data cells are registered with the control plane (the first gets the root namespace
// '/'), and one line beginning `Baton dev cells ready:` names the router and every cell.
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Router } from '../router/router.js';
import { RouterGrpc } from '../router-grpc/router-grpc.js';
import { ProcessCell } from './testing/process-cell.js';
import { takenPortProblem } from './port-check.js';

export const devCellsUsage = `usage: baton dev --cells N [--data-dir DIR] [--base-port B]
  Runs a control-plane cell, N data cells (cell-1..cell-N) of 3 processes each and a router.
  --cells N        1..8 data cells
  --base-port B    the router's port, default 7000; cells at B+11.., B+21.., ... (peers +100, gRPC +200)
  --data-dir DIR   default ./data/dev-cells (or BATON_DATA_DIR)`;

export interface DevCellsLayout {
  readonly routerPort: number;
  readonly cells: readonly { readonly id: string; readonly control: boolean; readonly members: readonly { name: string; clientPort: number; peerPort: number; grpcPort: number }[] }[];
}

export function devCellsLayout(count: number, basePort: number): DevCellsLayout {
  const cells = [];
  for (let c = 0; c <= count; c++) {
    const id = c === 0 ? 'control' : `cell-${c}`;
    const members = [1, 2, 3].map((i) => {
      const client = basePort + 10 * (c + 1) + i;
      return { name: `n${i}`, clientPort: client, peerPort: client + 100, grpcPort: client + 200 };
    });
    cells.push({ id, control: c === 0, members });
  }
  return { routerPort: basePort, cells };
}

export async function runDevCells(argv: readonly string[]): Promise<number> {
  let values;
  try {
    values = parseArgs({
      args: [...argv],
      options: { cells: { type: 'string' }, 'data-dir': { type: 'string' }, 'base-port': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }).values;
  } catch (error) {
    process.stderr.write(`baton dev: ${(error as Error).message}\n\n${devCellsUsage}\n`);
    return 2;
  }
  if (values.help === true) {
    process.stdout.write(`${devCellsUsage}\n`);
    return 0;
  }
  const count = Number(values.cells);
  const basePort = Number(values['base-port'] ?? 7000);
  if (!Number.isSafeInteger(count) || count < 1 || count > 8 || !Number.isSafeInteger(basePort) || basePort < 1 || basePort + 400 > 65535) {
    process.stderr.write(`baton dev: --cells takes 1..8 and --base-port a port with 400 free above it\n\n${devCellsUsage}\n`);
    return 2;
  }
  const layout = devCellsLayout(count, basePort);
  const host = '127.0.0.1';
  const problem = await takenPortProblem([
    { what: 'the router, --base-port', host, port: layout.routerPort },
    { what: 'the router etcd gRPC, --base-port + 200', host, port: layout.routerPort + 200 },
    ...layout.cells.flatMap((cell) => cell.members.flatMap((m) => [
      { what: `${cell.id} ${m.name} HTTP API`, host, port: m.clientPort },
      { what: `${cell.id} ${m.name} peers`, host, port: m.peerPort },
      { what: `${cell.id} ${m.name} etcd gRPC`, host, port: m.grpcPort },
    ])),
  ]);
  if (problem !== null) {
    process.stderr.write(`Baton dev cells cannot start: ${problem}.\n  Stop what holds it, or pick another --base-port.\n`);
    return 2;
  }
  const dataDir = resolve(values['data-dir'] ?? process.env['BATON_DATA_DIR'] ?? './data/dev-cells');
  const running = layout.cells.map((cell) => ({
    id: cell.id,
    process: new ProcessCell({
      dataDir: join(dataDir, cell.id), host, output: 'inherit', members: cell.members,
      extraArgs: ['--cell', cell.id, ...(cell.control ? ['--control-plane'] : [])],
    }),
  }));
  const control = running[0] as (typeof running)[number];
  const router = new Router({ control: control.process.clientUrls(), host, port: layout.routerPort, log: (m) => process.stderr.write(`router: ${m}\n`) });
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    process.stdout.write('Baton dev cells stopping\n');
    await router.stop();
    await Promise.all(running.map((cell) => cell.process.stopAll()));
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  try {
    for (const cell of running) cell.process.startAll();
    await Promise.all(running.map((cell) => cell.process.waitReady(60_000)));
    for (const cell of running.slice(1)) await registerCell(control.process.clientUrls(), cell.id, cell.process.clientUrls());
    const { url } = await router.start();
    await router.cache.ready(10_000);
    process.stdout.write(`Baton dev cells: router etcd gRPC ${(await RouterGrpc.start(router, { host, port: layout.routerPort + 200 })).url}\n`);
    const cells = running.map((cell) => `${cell.id}=${cell.process.clientUrls().join(',')}`).join(' ');
    process.stdout.write(`Baton dev cells ready: router ${url} ${cells}\n`);
  } catch (error) {
    process.stderr.write(`Baton dev cells failed to start: ${(error as Error).message}\n`);
    await stop();
    return 1;
  }
  await Promise.all(running.flatMap((cell) => cell.process.names().map((name) => cell.process.waitExit(name, 2 ** 31 - 1).catch(() => 'gone'))));
  return stopping ? 0 : 1;
}

/** Adds (or re-adds, on a restart: same endpoints, a no-op in effect) a data cell to the map. */
export async function registerCell(controlUrls: readonly string[], id: string, endpoints: readonly string[]): Promise<void> {
  let last = '';
  for (let attempt = 0; attempt < 20; attempt++) {
    for (const url of controlUrls) {
      try {
        const response = await fetch(`${url}/v1/control/cells`, {
          method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, endpoints }), signal: AbortSignal.timeout(5_000),
        });
        const text = await response.text();
        if (response.ok) return;
        last = `HTTP ${response.status} ${text}`;
      } catch (error) {
        last = (error as Error).message;
      }
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`registering ${id} with the control plane failed: ${last}`);
}
