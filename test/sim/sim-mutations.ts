// `npm run sim:mutations -- [--seeds N] [--seed-start S] [--only NAME]`: each planted mutation's
// catch rate in the plain sweep (issue 23): seeds to the first catch, the fraction caught (a seed
// counts only if it runs clean without the bug), and the seeds that fail without it (findings).
// --skip-lock-seeds: the seeds that draw the lock workload are counted as missed without running
// (seconds each), so the fraction printed is a lower bound on the plain sweep's catch rate.
import { parseArgs } from 'node:util';
import { plainSweepOptions } from '../../src/sim/index.js';
import { mutations, tryMutation } from './mutation-sweep.js';

const { values } = parseArgs({
  options: { 'skip-lock-seeds': { type: 'boolean', default: false }, seeds: { type: 'string', default: '300' }, 'seed-start': { type: 'string', default: '1' }, only: { type: 'string', multiple: true } },
});
const count = Number(values.seeds);
const start = BigInt(values['seed-start']);
const names = values.only ?? [...mutations.keys()];
let below = 0;
for (const name of names) {
  const bug = mutations.get(name);
  if (bug === undefined) throw new Error(`no mutation ${name}; known: ${[...mutations.keys()].join(', ')}`);
  const started = performance.now();
  let caught = 0;
  let first: bigint | null = null;
  let firstIndex = 0;
  const findings: bigint[] = [];
  for (let i = 0; i < count; i++) {
    const seed = start + BigInt(i);
    if (values['skip-lock-seeds'] && plainSweepOptions(seed).workload === 'locks') continue;
    const { outcome } = await tryMutation(seed, bug);
    if (outcome === 'finding') findings.push(seed);
    if (outcome !== 'caught') continue;
    caught++;
    if (first === null) {
      first = seed;
      firstIndex = i + 1;
    }
  }
  const fraction = caught / count;
  if (fraction < 0.01) below++;
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `${name}${values['skip-lock-seeds'] ? ' (lock seeds not run: a lower bound)' : ''}: ${caught}/${count} seeds caught (${(fraction * 100).toFixed(2)}%), ` +
      `first catch ${first === null ? 'none' : `seed ${first} (${firstIndex} seeds in)`}` +
      `${findings.length === 0 ? '' : `, ${findings.length} seeds fail without it too: ${findings.slice(0, 10).join(' ')}`}` +
      `, ${(count / seconds).toFixed(1)} seeds/s`,
  );
}
console.log(`${names.length} mutations, ${below} caught in under 1% of seeds ${start}-${start + BigInt(count) - 1n}`);
process.exitCode = below === 0 ? 0 : 1;
