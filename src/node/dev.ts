// `baton dev` (npm start): a 3-node cell on this machine, each node its own OS process so one can
// be killed or paused alone. Ports and the ready line follow api.md's conventions; restarting on
// the same data directory resumes the same cell. Ctrl-C or SIGTERM stops all three cleanly.
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ProcessCell } from './testing/process-cell.js';

export async function runDev(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: { 'data-dir': { type: 'string' }, secure: { type: 'boolean' }, help: { type: 'boolean' } },
    strict: true,
  });
  if (values.help === true) {
    process.stdout.write('baton dev [--data-dir DIR] [--secure]: run a local 3-node cell (HTTP :7001-7003, peers :7101-7103, etcd gRPC :7201-7203)\n'
      + '  --secure: a throwaway CA and certificates in DIR/certs (openssl), TLS on every listener, client certificates required\n');
    return 0;
  }
  const dataDir = resolve(values['data-dir'] ?? process.env['BATON_DATA_DIR'] ?? './data/dev');
  const secure = values.secure === true;
  const cell = new ProcessCell({
    dataDir,
    ...(secure ? { tlsDir: join(dataDir, 'certs') } : {}),
    output: 'inherit',
    members: [1, 2, 3].map((i) => ({ name: `n${i}`, clientPort: 7000 + i, peerPort: 7100 + i, grpcPort: 7200 + i })),
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
  if (cell.tls !== null) {
    const tls = cell.tls;
    process.stdout.write(`TLS everywhere; the root principal's certificate is ${tls.root.cert}\n`
      + `  curl ${tls.curlFlags()} -X PUT ${cell.clientUrl('n1')}/v1/kv/hello -d world\n`
      + `  node dist/src/cli/main.js get /hello --endpoints ${cell.clientUrls().join(',')} --cacert ${tls.ca.cert} --cert ${tls.root.cert} --key ${tls.root.key}\n`
      + `  new BatonClient({ endpoints: [...], tls: { ca, cert, key } })   (PEM contents; docs/security.md)\n`
      + `  ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:7201 --cacert ${tls.ca.cert} --cert ${tls.root.cert} --key ${tls.root.key} get hello\n`);
  }
  // Stay up until every node has exited (Ctrl-C stops them all).
  await Promise.all(cell.names().map((name) => cell.waitExit(name, 2 ** 31 - 1).catch(() => 'gone')));
  return stopping ? 0 : 1;
}
