// `baton bench`: the closed-loop load generator against a running cell (loopback only), as a
// table or JSON. `--system etcd` drives an etcd cell's v3 JSON gateway the same way.
import { parseArgs } from 'node:util';
import { parseEndpoints } from '../bench/http-client.js';
import {
  defaultMatrix, estimateSeconds, parseClientCounts, parseWorkloads, progressLine, runMatrix,
} from '../bench/matrix.js';
import { protocolFor, systemNames, type SystemName } from '../bench/protocols.js';
import { resultsTable, summarize } from '../bench/report.js';

const devEndpoints = 'http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003';

const usage =
  'usage: baton bench [--endpoints URL,...] [--workload put|get-lin|get-ser|txn|all]\n' +
  '                   [--clients 1,16,64,256] [--duration-s N] [--warmup-s N] [--repeats N]\n' +
  '                   [--system baton|etcd] [--json]\n' +
  'Closed-loop load: each client sends its next request when the previous answers (HTTP/1.1\n' +
  'keep-alive, 256-byte values). Defaults: the dev cell (http://127.0.0.1:7001,7002,7003), all\n' +
  'workloads, 1,16,64,256 clients, 5 s measured after 1 s of warm-up, 1 run each.\n';

export async function benchCommand(argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseBenchArgs(argv);
  } catch (error) {
    process.stderr.write(`baton bench: ${(error as Error).message}\n\n${usage}`);
    return 2;
  }
  const { values } = parsed;
  if (values.help === true) {
    process.stdout.write(usage);
    return 0;
  }
  try {
    const system = (values.system ?? 'baton') as SystemName;
    if (!systemNames.includes(system)) {
      throw new Error(`--system must be one of ${systemNames.join(', ')}`);
    }
    const urls = parseEndpoints(values.endpoints ?? devEndpoints);
    const options = {
      ...defaultMatrix,
      targets: [{ protocol: protocolFor(system), urls }],
      workloads: parseWorkloads(values.workload ?? 'all'),
      clients:
        values.clients === undefined ? defaultMatrix.clients : parseClientCounts(values.clients),
      durationMs:
        1000 * seconds(values['duration-s'], defaultMatrix.durationMs / 1000, 'duration-s'),
      warmupMs: 1000 * seconds(values['warmup-s'], defaultMatrix.warmupMs / 1000, 'warmup-s'),
      repeats: count(values.repeats, 1, 'repeats'),
    };
    const json = values.json === true;
    const log = (line: string): void => void process.stderr.write(`${line}\n`);
    const origins = urls.map((u) => u.origin).join(',');
    log(`bench: ${system} at ${origins}, about ${Math.ceil(estimateSeconds(options))} s`);
    const results = await runMatrix({ ...options, onResult: (r) => log(progressLine(r)) });
    if (json) {
      const summary = summarize(results);
      process.stdout.write(`${JSON.stringify({ results, summary }, null, 2)}\n`);
    } else process.stdout.write(`${resultsTable(summarize(results))}\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`baton bench: ${(error as Error).message}\n`);
    return 1;
  }
}

function seconds(text: string | undefined, fallback: number, flag: string): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0 || n > 3600) {
    throw new Error(`--${flag} must be a number of seconds (0..3600)`);
  }
  return n;
}

function count(text: string | undefined, fallback: number, flag: string): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 100) {
    throw new Error(`--${flag} must be an integer 1..100`);
  }
  return n;
}

function parseBenchArgs(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    options: {
      endpoints: { type: 'string' },
      workload: { type: 'string' },
      clients: { type: 'string' },
      'duration-s': { type: 'string' },
      'warmup-s': { type: 'string' },
      repeats: { type: 'string' },
      system: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
}
