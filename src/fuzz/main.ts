// npm run fuzz -- --requests N --seed S [--members M] [--no-grpc] [--concurrency C] [--only INDEX]
// Starts a local cell on free loopback ports, attacks it with N seeded hostile requests and exits
// 1 on any finding (each printed with its request and the command that replays it).
import { parseArgs } from 'node:util';
import { formatReport } from './report.js';
import { defaultFuzzOptions, runFuzz, type FuzzOptions } from './run.js';

const usage = `usage: npm run fuzz -- [--requests N] [--seed S] [--members M] [--no-grpc] [--concurrency C]
                     [--only INDEX] [--case-timeout-ms MS]`;

function integer(text: string | undefined, name: string, fallback: number, min: number): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < min) throw new Error(`--${name} must be an integer >= ${min}\n${usage}`);
  return Number(text);
}

export function parseFuzzArgs(args: readonly string[]): FuzzOptions {
  const { values } = parseArgs({
    args: [...args],
    options: {
      requests: { type: 'string' }, seed: { type: 'string' }, members: { type: 'string' }, 'no-grpc': { type: 'boolean' },
      concurrency: { type: 'string' }, only: { type: 'string' }, 'case-timeout-ms': { type: 'string' }, help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help === true) throw new Error(usage);
  const seedText = values.seed ?? String(defaultFuzzOptions.seed);
  if (!/^(0x[0-9a-f]+|\d+)$/i.test(seedText)) throw new Error(`--seed must be an integer\n${usage}`);
  const only = values.only === undefined ? undefined : integer(values.only, 'only', 0, 0);
  return {
    requests: integer(values.requests, 'requests', defaultFuzzOptions.requests, 1),
    seed: BigInt(seedText),
    members: integer(values.members, 'members', defaultFuzzOptions.members, 1),
    grpc: values['no-grpc'] !== true,
    concurrency: integer(values.concurrency, 'concurrency', defaultFuzzOptions.concurrency, 1),
    caseTimeoutMs: integer(values['case-timeout-ms'], 'case-timeout-ms', defaultFuzzOptions.caseTimeoutMs, 100),
    ...(only !== undefined ? { only } : {}),
  };
}

async function main(): Promise<number> {
  let options: FuzzOptions;
  try {
    options = parseFuzzArgs(process.argv.slice(2));
  } catch (error) {
    console.error((error as Error).message);
    return 2;
  }
  const report = await runFuzz({ ...options, log: (line) => console.log(line) });
  console.log(formatReport(report));
  return report.failures.length === 0 && report.runProblems.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
