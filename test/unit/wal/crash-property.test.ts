// Property: whatever the point of a crash, recovery yields exactly a prefix of what was written
// that includes every acknowledged save. Each seed runs rounds of random concurrent appends,
// overwrites, hard states, snapshot markers and releases through a WAL whose file I/O crashes
// after a random byte budget (tearing the write in flight); the next round reopens the WAL and
// checks the recovered state against a reference model, record by record.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRandom, chance, randomInt } from '../../../src/base/random.js';
import type { Entry, HardState, SnapshotMeta } from '../../../src/raft/index.js';
import { InlineExecutor, Wal } from '../../../src/wal/index.js';
import { CrashingFileIo, SimulatedCrash } from './crash-io.js';
import { MemoryLogger, makeEntry, withTempDir } from './helpers.js';
import { WalModel } from './model.js';

const conf = { voters: [1], votersOutgoing: [], learners: [] };
const sizes = { segmentBytes: 8 * 1024, writeBytesMax: 2 * 1024 };

interface Round {
  /** Model signature after each record of this round (index 0: the recovered state). */
  readonly signatures: string[];
  durable: number;
}

/** Issues one random operation; returns its promise and how many records it queued. */
function randomOperation(
  random: SeededRandom,
  wal: Wal,
  model: WalModel,
  round: Round,
): Promise<unknown> {
  const record = (): void => {
    round.signatures.push(model.signature());
  };
  const roll = randomInt(random, 0, 99);
  if (roll < 8 && model.hardState.commit > model.startIndex) {
    const index = randomInt(random, model.startIndex + 1, model.hardState.commit);
    const meta: SnapshotMeta = { index, term: model.termAt(index) ?? 0, confState: conf };
    model.applySnapshot(meta);
    record();
    return track(wal.markSnapshot(meta), round);
  }
  if (roll < 10) {
    // A snapshot from a leader beyond our log (a different term): it replaces the log.
    const term = model.hardState.term + 1;
    const index = model.lastIndex + randomInt(random, 1, 5);
    const meta: SnapshotMeta = { index, term, confState: conf };
    model.applySnapshot(meta);
    record();
    const promise = wal.markSnapshot(meta);
    const hardState = { term, vote: 0, commit: meta.index };
    model.applyHardState(hardState);
    record();
    return Promise.all([promise, track(wal.save([], hardState), round)]);
  }
  if (roll < 16) return wal.releaseBefore(model.startIndex);
  const floor = Math.max(model.hardState.commit, model.startIndex);
  const overwrite = roll < 30 && model.lastIndex > floor;
  const first = overwrite
    ? randomInt(random, Math.max(model.hardState.commit, model.startIndex) + 1, model.lastIndex)
    : model.lastIndex + 1;
  const term = model.hardState.term + (overwrite ? 1 : 0);
  const entries: Entry[] = [];
  for (let k = 0; k < randomInt(random, overwrite ? 1 : 0, 6); k++) {
    entries.push(makeEntry(first + k, term, randomInt(random, 0, 700)));
  }
  for (const entry of entries) {
    model.applyEntry(entry);
    record();
  }
  let hardState: HardState | null = null;
  if (chance(random, 0.6) || overwrite) {
    const commit = randomInt(random, model.hardState.commit, model.lastIndex);
    hardState = { term, vote: randomInt(random, 0, 3), commit };
    model.applyHardState(hardState);
    record();
  }
  return track(wal.save(entries, hardState), round);
}

/** When a save resolves, every record queued before it is durable. */
function track(promise: Promise<void>, round: Round): Promise<void> {
  const upTo = round.signatures.length - 1;
  return promise.then(() => {
    round.durable = Math.max(round.durable, upTo);
  });
}

async function runSeed(
  seed: bigint,
  dir: string,
): Promise<{ crashes: number; truncations: number }> {
  const random = new SeededRandom(seed);
  const logger = new MemoryLogger();
  let previous: Round | null = null;
  let crashes = 0;
  for (let roundNumber = 0; roundNumber < 14; roundNumber++) {
    const io = new CrashingFileIo(
      chance(random, 0.15) ? Infinity : randomInt(random, 0, 40_000),
      random.fork(roundNumber),
    );
    const executor = new InlineExecutor(io);
    const opened = await Wal.open(dir, { ...sizes, logger, executor }).catch(
      (error: unknown) => (error instanceof SimulatedCrash ? null : Promise.reject(error)),
    );
    if (opened === null) {
      crashes++; // the crash hit the first segment's creation: nothing was acknowledged
      continue;
    }
    const { wal, recovered } = opened;
    const model = WalModel.from(recovered);
    if (previous !== null) {
      const allowed = previous.signatures.slice(previous.durable);
      const written = previous.signatures.length - 1;
      const durable = previous.durable;
      const context = `seed ${seed} round ${roundNumber}: durable ${durable} of ${written}`;
      assert.ok(allowed.includes(model.signature()), `not a durable prefix (${context})`);
    }
    const round: Round = { signatures: [model.signature()], durable: 0 };
    for (let burst = 0; burst < 12 && !io.crashed; burst++) {
      const promises: Promise<unknown>[] = [];
      for (let k = randomInt(random, 1, 5); k > 0; k--) {
        promises.push(randomOperation(random, wal, model, round));
      }
      const outcomes = await Promise.allSettled(promises);
      for (const outcome of outcomes) {
        const crashed = outcome.status === 'rejected' && outcome.reason instanceof SimulatedCrash;
        if (outcome.status === 'rejected' && !crashed) throw outcome.reason;
      }
    }
    if (io.crashed) crashes++;
    await wal.close();
    previous = round;
  }
  const truncations = logger.lines.filter((line) => line.includes('truncated torn tail')).length;
  return { crashes, truncations };
}

test('recovery after a crash at a random point yields exactly a durable prefix', async () => {
  let crashes = 0;
  let truncations = 0;
  for (const seed of [1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 0x5eedn, 0xbadn]) {
    await withTempDir(async (dir) => {
      const outcome = await runSeed(seed, dir);
      crashes += outcome.crashes;
      truncations += outcome.truncations;
    });
  }
  if (process.env['BATON_VERBOSE'] !== undefined) console.log({ crashes, truncations });
  // The run must actually exercise crashes and torn tails, or it proves nothing.
  assert.ok(crashes >= 50, `crashes: ${crashes}`);
  assert.ok(truncations >= 10, `torn tails truncated: ${truncations}`);
});
