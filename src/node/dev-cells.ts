// `baton dev --cells N` (docs/design/cells.md): a control-plane cell, N data cells (cell-1 ...
// cell-N) of 3 processes each, and one router, on this machine. Port layout from --base-port B
// (default 7000): the router on B; cell c (0 = the control plane, 1..N the data cells) has client
// ports B+10(c+1)+1..3, peer ports 100 above, gRPC ports 200 above (B=7000: control 7011-7013,
// cell-1 7021-7023, cell-2 7031-7033 ...). Data in DIR/control and DIR/cell-K. Once every cell is
// ready the data cells are registered with the control plane (the first gets the root namespace
// '/'), and one line beginning `Baton dev cells ready:` names the router and every cell. With
// --secure everything speaks TLS under one throwaway CA (dev-cells-tls.ts), as `baton dev --secure`.
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Router } from '../router/router.js';
import { RouterGrpc } from '../router-grpc/router-grpc.js';
import { httpsRequest } from './testing/cell-tls.js';
import { ProcessCell } from './testing/process-cell.js';
import type { CertFiles } from '../security/certs.js';
import { devCellsTls, type DevCellsTls } from './dev-cells-tls.js';
import { takenPortProblem } from './port-check.js';

export const devCellsUsage = `usage: baton dev --cells N [--data-dir DIR] [--base-port B]
  Runs a control-plane cell, N data cells (cell-1..cell-N) of 3 processes each and a router.
  --cells N        1..8 data cells
  --base-port B    the router's port, default 7000; cells at B+11.., B+21.., ... (peers +100, gRPC +200)
  --data-dir DIR   default ./data/dev-cells (or BATON_DATA_DIR)
  --secure         one throwaway CA and certificates in DIR/certs (openssl): TLS on every member's
                   client and peer listeners (client certificates required, node identity between
                   members) and on the router's HTTPS, stream and gRPC listeners; the router
                   presents its own client certificate (principal "router") to the cells`;

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
      options: {
        cells: { type: 'string' }, 'data-dir': { type: 'string' }, 'base-port': { type: 'string' }, secure: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
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
  const log = (m: string): void => void process.stderr.write(`router: ${m}\n`);
  let tls: DevCellsTls | null;
  try {
    // Made before the cells: their CellTls finds this CA and revocation list in the directory.
    tls = values.secure === true ? devCellsTls(join(dataDir, 'certs'), log) : null;
  } catch (error) {
    process.stderr.write(`Baton dev cells cannot start: certificates: ${(error as Error).message}\n`);
    return 1;
  }
  const running = layout.cells.map((cell) => ({
    id: cell.id,
    process: new ProcessCell({
      dataDir: join(dataDir, cell.id), host, output: 'inherit', members: cell.members,
      extraArgs: ['--cell', cell.id, ...(cell.control ? ['--control-plane'] : [])],
      ...(tls === null ? {} : { tlsDir: tls.dir, tlsFilesByCell: true }),
    }),
  }));
  const control = running[0] as (typeof running)[number];
  const root = control.process.tls?.root;
  const router = new Router({ control: control.process.clientUrls(), host, port: layout.routerPort, log, ...(tls === null ? {} : { tls: tls.router }) });
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    process.stdout.write('Baton dev cells stopping\n');
    await router.stop();
    tls?.close();
    await Promise.all(running.map((cell) => cell.process.stopAll()));
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  try {
    for (const cell of running) cell.process.startAll();
    await Promise.all(running.map((cell) => cell.process.waitReady(60_000)));
    const asRoot = tls === null || root === undefined ? null : { ca: tls.ca.cert, client: root };
    for (const cell of running.slice(1)) await registerCell(control.process.clientUrls(), cell.id, cell.process.clientUrls(), asRoot);
    const { url } = await router.start();
    await router.cache.ready(10_000);
    const grpc = await RouterGrpc.start(router, { host, port: layout.routerPort + 200, ...(tls?.router.listener === undefined ? {} : { tls: tls.router.listener }) });
    process.stdout.write(`Baton dev cells: router etcd gRPC ${grpc.url}\n`);
    const cells = running.map((cell) => `${cell.id}=${cell.process.clientUrls().join(',')}`).join(' ');
    process.stdout.write(`Baton dev cells ready: router ${url} ${cells}\n`);
    if (tls !== null && root !== undefined) process.stdout.write(secureHowTo(tls, root, url, grpc.url));
  } catch (error) {
    process.stderr.write(`Baton dev cells failed to start: ${(error as Error).message}\n`);
    await stop();
    return 1;
  }
  await Promise.all(running.flatMap((cell) => cell.process.names().map((name) => cell.process.waitExit(name, 2 ** 31 - 1).catch(() => 'gone'))));
  return stopping ? 0 : 1;
}

/** How to call the secured setup, as `baton dev --secure` prints it (paths a user needs). */
function secureHowTo(tls: DevCellsTls, root: CertFiles, routerUrl: string, grpcUrl: string): string {
  const files = `--cacert ${tls.ca.cert} --cert ${root.cert} --key ${root.key}`;
  return `TLS everywhere, one CA ${tls.ca.cert}; the root principal's certificate is ${root.cert} (key ${root.key})\n`
    + `  baton put /hello world --endpoints ${routerUrl} ${files}\n`
    + `  baton ns list --endpoints ${routerUrl} ${files}\n`
    + `  curl ${files} ${routerUrl}/v1/kv/hello\n`
    + `  ETCDCTL_API=3 etcdctl --endpoints=${grpcUrl} ${files} get hello\n`
    + `The router presents ${tls.routerClient.cert} to the cells (principal "router"): through it, per-user\n`
    + '  authorization is by tokens; with authorization on a data cell, bind the control plane there:\n'
    + '  "cell:control": ["root"] (docs/security.md "The router").\n'
    + `More principals: baton certs client NAME --dir ${tls.dir}; revoke one: baton certs revoke FILE --dir ${tls.dir}`
    + ` (every member and the router read ${tls.crl})\n`;
}

/** A POST to the control plane, over https (trusting `tls.ca`, presenting `tls.client`) when given. */
async function postJson(url: string, body: unknown, tls: { ca: string; client: CertFiles } | null): Promise<{ ok: boolean; status: number; text: string }> {
  const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
  if (tls !== null) {
    const answer = await httpsRequest(url, { ...init, ca: tls.ca, client: tls.client, timeoutMs: 5_000 });
    return { ok: answer.status >= 200 && answer.status < 300, status: answer.status, text: answer.body };
  }
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(5_000) });
  return { ok: response.ok, status: response.status, text: await response.text() };
}

/**
 * Adds (or re-adds, on a restart: same endpoints, a no-op in effect) a data cell to the map.
 * `tls`: a TLS control plane, called as root (the CA to trust and the root client certificate).
 */
export async function registerCell(
  controlUrls: readonly string[], id: string, endpoints: readonly string[], tls: { ca: string; client: CertFiles } | null = null,
): Promise<void> {
  let last = '';
  for (let attempt = 0; attempt < 20; attempt++) {
    for (const url of controlUrls) {
      try {
        const response = await postJson(`${url}/v1/control/cells`, { id, endpoints }, tls);
        if (response.ok) return;
        last = `HTTP ${response.status} ${response.text}`;
      } catch (error) {
        last = (error as Error).message;
      }
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`registering ${id} with the control plane failed: ${last}`);
}
