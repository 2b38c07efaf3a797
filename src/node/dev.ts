// `baton dev` (npm start): a 3-node cell on this machine, each node its own OS process so one can
// be killed or paused alone. Ports and the ready line follow api.md's conventions; restarting on
// the same data directory resumes the same cell. Ctrl-C or SIGTERM stops all three cleanly.
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ProcessCell } from './testing/process-cell.js';
import { takenPortProblem } from './port-check.js';

const usage = `usage: baton dev [--data-dir DIR] [--secure] [--client-ports P1,P2,P3] [--peer-ports P1,P2,P3]
                 [--grpc-ports P1,P2,P3]
  Runs a local 3-node cell, each node its own process; restarting on the same DIR resumes it.
  --data-dir DIR   default ./data/dev (or BATON_DATA_DIR)
  --client-ports   the HTTP API, default 7001,7002,7003 (or BATON_DEV_CLIENT_PORTS)
  --peer-ports     Raft peers, default 7101,7102,7103 (or BATON_DEV_PEER_PORTS)
  --grpc-ports     the etcd v3 gRPC facade, default 7201,7202,7203 (or BATON_DEV_GRPC_PORTS)
  --secure         a throwaway CA and certificates in DIR/certs (openssl), TLS on every listener,
                   client certificates required, the CA's revocation list DIR/certs/crl.pem read by every member
  A port already taken stops it at once (exit 2), naming the port.
  --cells N        instead: a control plane, N data cells (cell-1..cell-N) and a router
                   (with --secure: one CA for all of them, TLS on the router's listeners too)
  --base-port B    with --cells: the router's port (default 7000), the cells' above it
                   (baton dev --cells 1 --help has the layout)`;

const defaultPorts = { client: [7001, 7002, 7003], peer: [7101, 7102, 7103], grpc: [7201, 7202, 7203] } as const;

export async function runDev(argv: readonly string[]): Promise<number> {
  // Several cells behind a router (docs/design/cells.md); without --cells, one cell as always.
  if (argv.some((arg) => arg === '--cells' || arg.startsWith('--cells='))) return (await import('./dev-cells.js')).runDevCells(argv);
  let values;
  let ports;
  try {
    values = parseArgs({
      args: [...argv],
      options: {
        'data-dir': { type: 'string' }, secure: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
        'client-ports': { type: 'string' }, 'peer-ports': { type: 'string' }, 'grpc-ports': { type: 'string' },
      },
      strict: true,
    }).values;
    ports = {
      client: portList(values['client-ports'] ?? process.env['BATON_DEV_CLIENT_PORTS'], 'client-ports', defaultPorts.client),
      peer: portList(values['peer-ports'] ?? process.env['BATON_DEV_PEER_PORTS'], 'peer-ports', defaultPorts.peer),
      grpc: portList(values['grpc-ports'] ?? process.env['BATON_DEV_GRPC_PORTS'], 'grpc-ports', defaultPorts.grpc),
    };
    if (new Set([...ports.client, ...ports.peer, ...ports.grpc]).size !== 9) {
      throw new Error('--client-ports, --peer-ports and --grpc-ports must not share a port');
    }
  } catch (error) {
    process.stderr.write(`baton dev: ${(error as Error).message}\n\n${usage}\n`);
    return 2;
  }
  if (values.help === true) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const dataDir = resolve(values['data-dir'] ?? process.env['BATON_DATA_DIR'] ?? './data/dev');
  const secure = values.secure === true;
  const host = '127.0.0.1';
  const members = [0, 1, 2].map((i) => ({
    name: `n${i + 1}`, clientPort: ports.client[i] as number, peerPort: ports.peer[i] as number, grpcPort: ports.grpc[i] as number,
  }));
  const problem = await takenPortProblem(members.flatMap((member) => [
    { what: `${member.name} HTTP API, --client-ports`, host, port: member.clientPort },
    { what: `${member.name} peers, --peer-ports`, host, port: member.peerPort },
    { what: `${member.name} etcd gRPC, --grpc-ports`, host, port: member.grpcPort },
  ]));
  if (problem !== null) {
    process.stderr.write(`Baton dev cell cannot start: ${problem}.\n`
      + '  Stop the cell that holds it, or pick other ports with --client-ports/--peer-ports/--grpc-ports.\n');
    return 2;
  }
  const cell = new ProcessCell({
    dataDir,
    host,
    ...(secure ? { tlsDir: join(dataDir, 'certs') } : {}),
    output: 'inherit',
    members,
  });
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    process.stdout.write('Baton dev cell stopping\n');
    await cell.stopAll();
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  cell.startAll();
  try {
    await cell.waitReady(30_000);
  } catch (error) {
    process.stderr.write(`Baton dev cell failed to start: ${(error as Error).message}\n`);
    await stop();
    return 1;
  }
  process.stdout.write(`Baton dev cell ready: ${cell.clientUrls().join(',')}\n`);
  process.stdout.write(`Web console: ${cell.clientUrl('n1')}/ui/ (every node serves one; docs/console.md)\n`);
  if (cell.tls !== null) {
    const tls = cell.tls;
    process.stdout.write(`TLS everywhere; the root principal's certificate is ${tls.root.cert}\n`
      + `  curl ${tls.curlFlags()} -X PUT ${cell.clientUrl('n1')}/v1/kv/hello -d world\n`
      + `  baton get /hello --endpoints ${cell.clientUrls().join(',')} --cacert ${tls.ca.cert} --cert ${tls.root.cert} --key ${tls.root.key}\n`
      + `  new BatonClient({ endpoints: [...], tls: { ca, cert, key } })   (PEM contents; docs/security.md)\n`
      + `  ETCDCTL_API=3 etcdctl --endpoints=https://${cell.grpcEndpoint('n1')} --cacert ${tls.ca.cert} --cert ${tls.root.cert} --key ${tls.root.key} get hello\n`
      + `More principals: baton certs client NAME --dir ${tls.dir}; revoke one: baton certs revoke FILE --dir ${tls.dir} (every member reads ${tls.crl})\n`);
  }
  // Stay up until every node has exited (Ctrl-C stops them all).
  await Promise.all(cell.names().map((name) => cell.waitExit(name, 2 ** 31 - 1).catch(() => 'gone')));
  return stopping ? 0 : 1;
}

/** Three distinct ports from "P1,P2,P3" (absent: the defaults); a bad list is a usage error. */
function portList(text: string | undefined, flag: string, fallback: readonly number[]): readonly number[] {
  if (text === undefined || text === '') return fallback;
  const ports = text.split(',').map((part) => Number(part.trim()));
  const valid = ports.every((port) => Number.isSafeInteger(port) && port >= 1 && port <= 65535);
  if (ports.length !== 3 || !valid || new Set(ports).size !== 3) {
    throw new Error(`--${flag} takes three distinct ports 1-65535, comma-separated (not "${text}")`);
  }
  return ports;
}
