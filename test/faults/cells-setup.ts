// The processes of a fault run across cells (`--cells 2`): a control plane of 3 members, data
// cells of 3 members each (behind fault proxies, so a leader can be cut off), and one router as
// its own process (`baton router`), so the nemesis can kill -9 it and start it again on its port.
// Namespaces are created on the cells in turn; the run is ready once a put through the router
// lands in each one.
import { spawn, type ChildProcess } from 'node:child_process';
import { cliPath } from '../cluster/cli-run.js';
import { freePorts, http, registerCells, sleep, startTestCell, type TestCell, within } from '../cluster/harness.js';

export interface CellsSetup {
  readonly control: TestCell;
  /** Data cells by id (`cell-1`, ...). */
  readonly cells: ReadonlyMap<string, TestCell>;
  readonly router: RouterProcess;
  /** The cell each prefix was created on. */
  readonly owners: ReadonlyMap<string, string>;
  close(): Promise<void>;
}

/** The router as a child process on a fixed port, so clients keep its URL across restarts. */
export class RouterProcess {
  private child: ChildProcess | null = null;
  constructor(
    readonly url: string,
    private readonly controlUrls: readonly string[],
  ) {}

  start(): void {
    if (this.isRunning()) return;
    this.child = spawn(process.execPath, [cliPath, 'router', '--control', this.controlUrls.join(','), '--listen', this.url], {
      stdio: ['ignore', 'ignore', 'ignore'],
    });
  }

  isRunning(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  async kill9(): Promise<void> {
    const child = this.child;
    if (child === null || !this.isRunning()) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child === null || !this.isRunning()) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await within(exited, 5_000, () => child.kill('SIGKILL'));
  }
}

const json = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

export async function startCells(options: { cellCount: number; prefixes: readonly string[] }): Promise<CellsSetup> {
  const ids = Array.from({ length: options.cellCount }, (_, i) => `cell-${i + 1}`);
  const [control, ...dataCells] = await Promise.all([
    startTestCell({ size: 3, extraArgs: ['--cell', 'control', '--control-plane'] }),
    ...ids.map((id) => startTestCell({ size: 3, proxies: true, extraArgs: ['--cell', id] })),
  ]);
  const cells = new Map(ids.map((id, i) => [id, dataCells[i] as TestCell]));
  const [port] = await freePorts(1);
  const router = new RouterProcess(`http://127.0.0.1:${port}`, control.cell.clientUrls());
  const close = async (): Promise<void> => {
    await router.stop();
    await Promise.all([control, ...cells.values()].map((cell) => cell.close()));
  };
  try {
    await registerCells(control.cell.clientUrls()[0] as string, cells);
    const owners = new Map<string, string>();
    for (const [i, prefix] of options.prefixes.entries()) {
      const cell = ids[i % ids.length] as string;
      owners.set(prefix, cell);
      const created = await http(`${control.cell.clientUrls()[0]}/v1/control/namespaces`, json({ prefix, cell }));
      if (created.status !== 200) throw new Error(`namespace ${prefix}: ${created.status} ${JSON.stringify(created.body)}`);
    }
    router.start();
    for (const prefix of options.prefixes) await waitRouted(router.url, prefix);
    return { control, cells, router, owners, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Until a put under `prefix` through the router is acknowledged (the router read the map). */
async function waitRouted(routerUrl: string, prefix: string): Promise<void> {
  for (let attempt = 0; attempt < 300; attempt++) {
    const put = await http(`${routerUrl}/v1/kv${prefix}ready`, { method: 'PUT', body: 'ready', timeoutMs: 3_000 }).catch(() => null);
    if (put !== null && put.status < 300) return;
    await sleep(100);
  }
  throw new Error(`the router never routed ${prefix}`);
}
