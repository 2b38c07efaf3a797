// The model-based check shared by every engine's tests: feed a seeded workload to a real store in
// random batches and to the reference model, and demand identical outcomes (results, revisions,
// typed errors, duplicates) and identical answers to random reads after every batch.
import assert from 'node:assert/strict';
import { BatonError } from '../../../src/base/errors.js';
import { SeededRandom, chance, pick, randomInt } from '../../../src/base/random.js';
import { MvccStore } from '../../../src/mvcc/index.js';
import type { ApplyOutcome, KvEngine } from '../../../src/mvcc/index.js';
import { ReferenceModel, type ModelOutcome } from './reference-model.js';
import { batches, generateWorkload, randomRead, testLimits, type WorkItem } from './workload.js';

/** Uint8Array/Buffer -> hex, errors -> code + details, so deepEqual compares meaning. */
export function plain(value: unknown): unknown {
  if (value instanceof Uint8Array) return `bytes:${Buffer.from(value).toString('hex')}`;
  if (value instanceof BatonError) return { error: value.code, details: plain(value.details) };
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  }
  return value;
}

function attempt<T>(run: () => T): unknown {
  try {
    return plain(run());
  } catch (error) {
    if (!(error instanceof BatonError)) throw error;
    return plain(error);
  }
}

function storeOutcome(outcome: ApplyOutcome): unknown {
  if (outcome.type === 'noop') return 'noop';
  if (outcome.type === 'applied') return plain({ ok: true, duplicate: outcome.duplicate, result: outcome.result });
  return plain({ ok: false, duplicate: outcome.duplicate, error: outcome.error });
}

function modelOutcome(outcome: ModelOutcome): unknown {
  return plain(outcome.ok ? { ok: true, duplicate: outcome.duplicate, result: outcome.result } : outcome);
}

/** Applies one item to the model and returns what the store's outcome must look like. */
export function applyToModel(model: ReferenceModel, item: WorkItem): unknown {
  if (item.kind === 'command') return modelOutcome(model.apply(item.entry.index, item.envelope));
  model.noop(item.entry.index);
  return item.kind === 'noop' ? 'noop' : 'garbage';
}

export function assertSameOutcome(actual: ApplyOutcome, expected: unknown, where: string): void {
  if (expected === 'garbage') {
    assert.equal(actual.type, 'failed', where);
    return;
  }
  assert.deepEqual(storeOutcome(actual), expected, where);
}

/** Reads that must agree between store and model at any applied index. */
export function assertSameReads(store: MvccStore, model: ReferenceModel, seed: bigint, where: string): void {
  const random = new SeededRandom(seed);
  assert.equal(store.appliedIndex, model.appliedIndex, `${where}: applied index`);
  assert.equal(store.revision, model.revision, `${where}: revision`);
  assert.equal(store.compactRevision, model.compactRevision, `${where}: compact revision`);
  assert.equal(store.liveKeys(), model.keyCount, `${where}: live keys (counted at apply)`);
  assert.deepEqual(
    attempt(() => store.range({ type: 'get', key: '/', prefix: true })),
    attempt(() => model.range({ type: 'get', key: '/', prefix: true })),
    `${where}: whole key space`,
  );
  for (let i = 0; i < 12; i++) {
    const request = randomRead(random, model.revision, 2);
    assert.deepEqual(attempt(() => store.range(request)), attempt(() => model.range(request)), `${where}: ${JSON.stringify(plain(request))}`);
  }
  const startRevision = randomInt(random, 0, model.revision + 1);
  assert.deepEqual(
    attempt(() => store.events({ startRevision, limit: 20 })),
    attempt(() => model.eventsSince(startRevision, 20)),
    `${where}: events from ${startRevision}`,
  );
  const lease = randomInt(random, 1, 3);
  assert.deepEqual(store.keysOfLease(lease), model.keysOfLease(lease), `${where}: keys of lease ${lease}`);
}

export interface ModelCheckOptions {
  readonly seed: bigint;
  readonly entryCount: number;
  readonly batchSizeMax: number;
  readonly engine: KvEngine;
}

export function runModelCheck(options: ModelCheckOptions): MvccStore {
  const items = generateWorkload(options.seed, options.entryCount);
  const random = new SeededRandom(options.seed ^ 0xb47cn);
  const store = new MvccStore(options.engine, testLimits);
  const model = new ReferenceModel(testLimits);
  // Counted now (empty), so every later answer comes from the batches' tallies, not a scan.
  assert.equal(store.liveKeys(), 0);
  for (const batch of batches(random, items, options.batchSizeMax)) {
    const outcomes = store.applyBatch(batch.map((item) => item.entry));
    assert.equal(outcomes.length, batch.length);
    batch.forEach((item, i) => {
      const where = `seed ${options.seed} entry ${item.entry.index}`;
      assertSameOutcome(outcomes[i] as ApplyOutcome, applyToModel(model, item), where);
    });
    const last = batch[batch.length - 1] as WorkItem;
    if (chance(random, 0.5)) {
      assertSameReads(store, model, BigInt(randomInt(random, 0, 1e9)), `seed ${options.seed} at ${last.entry.index}`);
    }
  }
  assertSameReads(store, model, options.seed, `seed ${options.seed} at the end`);
  void pick;
  return store;
}
