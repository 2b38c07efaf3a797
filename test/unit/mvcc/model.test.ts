// Model-based property test of the MVCC store on the in-memory engine: seeded random sequences of
// every command (puts with preconditions and leases, deletes, txns, compactions, lease deletes,
// duplicates by Request-ID, invalid and garbage entries) in random batches give the same outcomes
// and the same read answers as the reference model. BATON_SEED=<n> reruns one seed.
import { test } from 'node:test';
import { MemoryEngine } from '../../../src/mvcc/index.js';
import { runModelCheck } from './model-check.js';

function seeds(fallback: readonly bigint[]): readonly bigint[] {
  const one = process.env['BATON_SEED'];
  return one === undefined ? fallback : [BigInt(one)];
}

test('the store answers like the reference model (memory engine)', () => {
  for (const seed of seeds([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 0x5eedn, 0xbadn])) {
    runModelCheck({ seed, entryCount: 400, batchSizeMax: 24, engine: new MemoryEngine() });
  }
});

test('one entry per batch and one big batch answer alike', () => {
  runModelCheck({ seed: 99n, entryCount: 300, batchSizeMax: 1, engine: new MemoryEngine() });
  runModelCheck({ seed: 99n, entryCount: 300, batchSizeMax: 300, engine: new MemoryEngine() });
});
