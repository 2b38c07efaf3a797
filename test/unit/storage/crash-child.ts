// Child process for crash.test.ts: opens the LMDB store in argv[2], and applies the seeded
// workload (seed argv[3], argv[4] entries) from its applied index on, in seeded batches, until
// done or killed, with commits argv[5] ('synced' or 'deferred') under boot id argv[6].
// Prints "ready <appliedIndex>" once open, "batch <appliedIndex>" after each batch, "done" at the
// end. With argv[7] = 'hold' it prints "applied" instead of "done" and waits to be killed (the
// store never closed).
import { SeededRandom } from '../../../src/base/random.js';
import { MvccStore } from '../../../src/mvcc/index.js';
import { LmdbEngine } from '../../../src/storage/index.js';
import { batches, generateWorkload, testLimits } from '../mvcc/workload.js';

const [directory, seedText, countText, commits, bootId, hold] = process.argv.slice(2);
const seed = BigInt(seedText ?? '1');
const entries = generateWorkload(seed, Number(countText ?? '1000')).map((item) => item.entry);
const engine = LmdbEngine.open({
  directory: directory ?? '.',
  commits: commits === 'deferred' ? 'deferred' : 'synced',
  ...(bootId === undefined ? {} : { bootId }),
});
const store = new MvccStore(engine, testLimits);
const start = store.appliedIndex;
process.stdout.write(`ready ${start}\n`);
const random = new SeededRandom(seed ^ BigInt(start + 1));
for (const batch of batches(random, entries.slice(start), 48)) {
  store.applyBatch(batch);
  // Synchronous on a pipe: the parent's kill lands while later batches are being applied.
  if (hold !== 'hold') process.stdout.write(`batch ${store.appliedIndex}\n`);
}
if (hold === 'hold') {
  process.stdout.write('applied\n');
  setInterval(() => {}, 60_000);
} else {
  await engine.close();
  process.stdout.write('done\n');
}
