// `npm run bench:grpc`: Baton's etcd gRPC facade vs etcd itself, through the same gRPC client
// (src/bench/grpc-load.ts), in the same run: a 3-process Baton cell and a 3-member etcd cell on
// free loopback ports (temp data directories, default durability). Round by round, alternating
// which system goes first, each workload (put, linearizable get) runs at each client count.
// Prints each system's median over the rounds and the median of the per-round Baton ÷ etcd
// ratios: the machine is shared, so only same-run ratios mean anything.
//
//   npm run bench:grpc                      3 rounds of 5 s per case (about 2 minutes)
//   npm run bench:grpc -- --quick           1 round of 2 s per case
// Flags: --rounds N --seconds S --clients 1,16 --value-bytes N
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { EtcdCell, etcdInstallHint, etcdVersion } from '../src/bench/etcd-cell.js';
import { runGrpcLoad, type GrpcOp } from '../src/bench/grpc-load.js';
import { freePorts } from '../src/bench/ports.js';
import { median, table } from '../src/bench/report.js';
import { ProcessCell } from '../src/server/process-cell.js';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    quick: { type: 'boolean' },
    rounds: { type: 'string' },
    seconds: { type: 'string' },
    clients: { type: 'string' },
    'value-bytes': { type: 'string' },
  },
  strict: true,
});
const quick = values.quick === true;
const rounds = Number(values.rounds ?? (quick ? 1 : 3));
const seconds = Number(values.seconds ?? (quick ? 2 : 5));
const clientCounts = (values.clients ?? '1,16').split(',').map(Number);
const valueBytes = Number(values['value-bytes'] ?? 256);
const ops: GrpcOp[] = ['put', 'get'];

const version = etcdVersion();
if (version === null) {
  console.error(etcdInstallHint);
  process.exit(2);
}
const dataDir = mkdtempSync(join(tmpdir(), 'baton-grpc-bench-'));
const ports = await freePorts(15);
const baton = new ProcessCell({
  dataDir: join(dataDir, 'baton'),
  members: [0, 1, 2].map((i) => ({ name: `n${i + 1}`, clientPort: ports[i] as number, peerPort: ports[3 + i] as number, grpcPort: ports[6 + i] as number })),
});
const etcd = new EtcdCell(
  join(dataDir, 'etcd'),
  [0, 1, 2].map((i) => ({ name: `e${i + 1}`, clientPort: ports[9 + i] as number, peerPort: ports[12 + i] as number })),
);
const systems = {
  baton: baton.names().map((name) => baton.grpcEndpoint(name)),
  etcd: etcd.clientUrls().map((url) => url.host),
};
type System = keyof typeof systems;
// figures[system][case] = per-round results
const figures = new Map<string, { opsPerSecond: number[]; p50Us: number[]; p99Us: number[] }>();
const record = (system: System, label: string, r: { opsPerSecond: number; p50: number; p99: number }): void => {
  const key = `${system}|${label}`;
  const entry = figures.get(key) ?? { opsPerSecond: [], p50Us: [], p99Us: [] };
  entry.opsPerSecond.push(r.opsPerSecond);
  entry.p50Us.push(r.p50);
  entry.p99Us.push(r.p99);
  figures.set(key, entry);
};
try {
  baton.startAll();
  etcd.startAll();
  await Promise.all([baton.waitReady(30_000), etcd.waitReady(30_000)]);
  console.log(`Baton (etcd gRPC facade) vs ${version}: ${rounds} round(s), ${seconds} s per case, ${valueBytes}-byte values`);
  for (let round = 0; round < rounds; round++) {
    const order: System[] = round % 2 === 0 ? ['baton', 'etcd'] : ['etcd', 'baton'];
    for (const op of ops) {
      for (const clients of clientCounts) {
        for (const system of order) {
          const result = await runGrpcLoad({
            endpoints: systems[system],
            op,
            clients,
            durationMs: seconds * 1000,
            valueBytes,
            prefix: `bench-${round}-${op}-${clients}`,
          });
          const summary = result.histogram.summary();
          record(system, `${op} x${clients}`, { opsPerSecond: result.opsPerSecond, p50: summary.p50Us, p99: summary.p99Us });
          console.log(
            `round ${round + 1} ${system.padEnd(5)} ${op} x${clients}: ${result.opsPerSecond.toFixed(0)} ops/s, ` +
              `p50 ${(summary.p50Us / 1000).toFixed(2)} ms, p99 ${(summary.p99Us / 1000).toFixed(2)} ms` +
              (result.errors > 0 ? `, ${result.errors} errors` : ''),
          );
        }
      }
    }
  }
  const rows: string[][] = [];
  for (const op of ops) {
    for (const clients of clientCounts) {
      const label = `${op} x${clients}`;
      const b = figures.get(`baton|${label}`);
      const e = figures.get(`etcd|${label}`);
      if (b === undefined || e === undefined) continue;
      const ratio = (xs: number[], ys: number[]): number => median(xs.map((x, i) => x / (ys[i] as number)));
      rows.push([
        label,
        median(b.opsPerSecond).toFixed(0),
        median(e.opsPerSecond).toFixed(0),
        ratio(b.opsPerSecond, e.opsPerSecond).toFixed(2),
        (median(b.p50Us) / 1000).toFixed(2),
        (median(e.p50Us) / 1000).toFixed(2),
        ratio(b.p50Us, e.p50Us).toFixed(2),
        ratio(b.p99Us, e.p99Us).toFixed(2),
      ]);
    }
  }
  console.log(
    table(
      ['case', 'baton ops/s', 'etcd ops/s', 'ops ratio', 'baton p50 ms', 'etcd p50 ms', 'p50 ratio', 'p99 ratio'],
      rows,
    ),
  );
  console.log('ratios are Baton ÷ etcd, the median of the per-round ratios (ops: higher is better for Baton; latency: lower)');
} finally {
  await Promise.all([baton.stopAll(), etcd.stopAll()]);
  rmSync(dataDir, { recursive: true, force: true });
}
