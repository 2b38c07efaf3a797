// npm run faults -- --time 60 --seed S [--clients 5] [--keys 3] [--reads serializable]
//   [--history FILE]  (the raw events, one JSON line each)
// Prints the summary (operations, faults by kind, each checker's verdict or its minimal failing
// sub-history) and exits 1 on a violation, 2 when a checker could not decide.
import { writeFileSync } from 'node:fs';
import { runFaults } from './runner.js';

function flag(name: string, fallback: string): string {
  const args = process.argv.slice(2);
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] !== undefined ? (args[at + 1] as string) : fallback;
}

const seed = BigInt(flag('seed', String(Date.now() % 100_000)));
const timeS = Number(flag('time', '60'));
const summary = await runFaults({
  seed,
  timeS,
  clients: Number(flag('clients', '5')),
  keys: Number(flag('keys', '3')),
  reads: flag('reads', 'linearizable') === 'serializable' ? 'serializable' : 'linearizable',
  onHistory: (events) => {
    const path = flag('history', '');
    if (path !== '') writeFileSync(path, events.map((e) => JSON.stringify(e)).join('\n') + '\n');
  },
});
console.log(`faults run: seed ${seed}, ${timeS} s`);
for (const line of summary.lines) console.log(line);
const rerun = `npm run faults -- --time ${timeS} --seed ${seed}`;
if (summary.verdict === 'ok') console.log('result: ok');
else console.log(`result: ${summary.verdict.toUpperCase()} (run the scenario again: ${rerun})`);
process.exitCode = summary.verdict === 'ok' ? 0 : summary.verdict === 'violation' ? 1 : 2;
