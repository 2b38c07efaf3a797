// Crash safety: the applied index is committed with the state it produced, so after a crash at
// any point (between batches or inside one) the store equals the reference model at the applied
// index it reports, and replaying the log from there ends exactly where an uncrashed store ends.
// Crashes are (1) a fault injected mid-batch, after which the LMDB environment is closed without
// committing and reopened, and (2) SIGKILL of a child process applying in a loop, with the
// deferred commits a node uses (a process crash loses nothing the OS already has) and synced ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SeededRandom, randomInt } from '../../../src/base/random.js';
import { MemoryEngine, MvccStore } from '../../../src/mvcc/index.js';
import type { KvEngine, KvWriter } from '../../../src/mvcc/index.js';
import type { Entry } from '../../../src/raft/types.js';
import { LmdbEngine, type CommitMode } from '../../../src/storage/index.js';
import { applyToModel, assertSameReads } from '../mvcc/model-check.js';
import { ReferenceModel } from '../mvcc/reference-model.js';
import { batches, generateWorkload, testLimits, type WorkItem } from '../mvcc/workload.js';
import { withTempDir } from './temp-dir.js';

class InjectedCrash extends Error {}

/** Passes writes through until `writesLeft` runs out, then throws mid-transaction. */
class CrashingEngine implements KvEngine {
  writesLeft = Infinity;
  constructor(private readonly inner: KvEngine) {}
  get(key: Uint8Array): Uint8Array | undefined {
    return this.inner.get(key);
  }
  range(range: { start: Uint8Array; end: Uint8Array }) {
    return this.inner.range(range);
  }
  snapshotEntries() {
    return this.inner.snapshotEntries();
  }
  replaceAll(entries: Iterable<{ key: Uint8Array; value: Uint8Array }>): void {
    this.inner.replaceAll(entries);
  }
  write<T>(body: (writer: KvWriter) => T): T {
    return this.inner.write((writer) =>
      body({
        get: (key) => writer.get(key),
        range: (range) => writer.range(range),
        put: (key, value) => {
          this.tick();
          writer.put(key, value);
        },
        delete: (key) => {
          this.tick();
          writer.delete(key);
        },
      }),
    );
  }
  private tick(): void {
    if (--this.writesLeft < 0) throw new InjectedCrash('crash');
  }
}

function referenceAt(items: readonly WorkItem[], appliedIndex: number): { model: ReferenceModel; hash: string } {
  const model = new ReferenceModel(testLimits);
  const prefix = items.slice(0, appliedIndex);
  for (const item of prefix) applyToModel(model, item);
  const store = new MvccStore(new MemoryEngine(), testLimits);
  store.applyBatch(prefix.map((item) => item.entry));
  return { model, hash: store.hash({ includeAppliedIndex: true }) };
}

function assertRecovered(store: MvccStore, items: readonly WorkItem[], where: string): void {
  const reference = referenceAt(items, store.appliedIndex);
  assert.equal(store.hash({ includeAppliedIndex: true }), reference.hash, `${where}: hash`);
  assertSameReads(store, reference.model, BigInt(store.appliedIndex), where);
}

test('a crash mid-batch keeps nothing of that batch (memory and LMDB), and replay is exact', async () => {
  await withTempDir(async (dir) => {
    const items = generateWorkload(31n, 500);
    const entries: Entry[] = items.map((item) => item.entry);
    const finalHash = referenceAt(items, entries.length).hash;
    const random = new SeededRandom(31n);
    let lmdb = LmdbEngine.open({ directory: dir });
    const memory = new MemoryEngine();
    try {
      for (const kind of ['memory', 'lmdb'] as const) {
        for (let crash = 0; crash < 6; crash++) {
          const engine = new CrashingEngine(kind === 'memory' ? memory : lmdb);
          const store = new MvccStore(engine, testLimits);
          engine.writesLeft = randomInt(random, 0, 400);
          const before = store.appliedIndex;
          try {
            for (const batch of batches(random, entries.slice(before), 40)) store.applyBatch(batch);
          } catch (error) {
            if (!(error instanceof InjectedCrash)) throw error;
          }
          if (kind === 'lmdb') {
            // The process "dies": the environment is closed without the batch committing.
            await lmdb.close();
            lmdb = LmdbEngine.open({ directory: dir });
          }
          const recovered = new MvccStore(kind === 'memory' ? memory : lmdb, testLimits);
          assertRecovered(recovered, items, `${kind} crash ${crash}`);
        }
        const store = new MvccStore(kind === 'memory' ? memory : lmdb, testLimits);
        store.applyBatch(entries);
        assert.equal(store.hash({ includeAppliedIndex: true }), finalHash, `${kind}: replay to the end`);
      }
    } finally {
      await lmdb.close();
    }
  });
});

interface ChildRun {
  readonly startIndex: number;
  readonly finished: boolean;
}

const bootId = 'boot-of-this-test';

/**
 * Runs the child; kills it `killDelayMs` after it reported `killAfterBatches` applied batches (a
 * count, not a time from start: on a fast, idle machine the whole run took less than the shortest
 * delay, and no child ever died mid-run). Infinity: never killed.
 */
function runChild(
  options: { dir: string; seed: bigint; count: number; killAfterBatches: number; killDelayMs: number; commits: CommitMode },
): Promise<ChildRun> {
  const script = fileURLToPath(new URL('./crash-child.js', import.meta.url));
  const args = [script, options.dir, String(options.seed), String(options.count), options.commits, bootId];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  let timer: NodeJS.Timeout | undefined;
  let batches = 0;
  child.stdout.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    output += text;
    batches += text.split('batch ').length - 1;
    if (timer === undefined && batches >= options.killAfterBatches) {
      timer = setTimeout(() => child.kill('SIGKILL'), options.killDelayMs);
    }
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', () => {
      clearTimeout(timer);
      const match = /ready (\d+)/.exec(output);
      if (match === null) return reject(new Error(`child never got ready: ${output}`));
      resolve({ startIndex: Number(match[1]), finished: output.includes('done') });
    });
  });
}

for (const commits of ['deferred', 'synced'] as const) {
  test(`SIGKILL at any point during apply (${commits} commits): the reopened store equals the model at its applied index`, async () => {
    await withTempDir(async (dir) => {
      const seed = 41n;
      const count = 1500;
      const items = generateWorkload(seed, count);
      const random = new SeededRandom(seed);
      let previous = 0;
      let kills = 0;
      for (let round = 0; round < 3; round++) {
        // About 60 batches in all: the kill lands early, in the middle or late, at a random moment.
        const killAfterBatches = randomInt(random, 1, 25);
        const run = await runChild({ dir, seed, count, killAfterBatches, killDelayMs: randomInt(random, 0, 3), commits });
        assert.equal(run.startIndex, previous, 'the child resumed at the recovered applied index');
        const engine = LmdbEngine.open({ directory: dir, commits, bootId });
        try {
          const store = new MvccStore(engine, testLimits);
          assert.ok(store.appliedIndex >= previous);
          assertRecovered(store, items, `after kill ${round}`);
          previous = store.appliedIndex;
          if (!run.finished) kills++;
        } finally {
          await engine.close();
        }
      }
      assert.ok(kills > 0, 'at least one child died mid-run');
      const done = await runChild({ dir, seed, count, killAfterBatches: Infinity, killDelayMs: 0, commits });
      assert.ok(done.finished);
      const engine = LmdbEngine.open({ directory: dir, commits, bootId });
      try {
        const store = new MvccStore(engine, testLimits);
        assert.equal(store.appliedIndex, count);
        assert.equal(store.hash({ includeAppliedIndex: true }), referenceAt(items, count).hash);
      } finally {
        await engine.close();
      }
    });
  });
}
