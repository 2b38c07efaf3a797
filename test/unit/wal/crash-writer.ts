// Child process for the kill -9 test (not a test itself): appends through a real WAL (worker
// thread, fdatasync) with several concurrent appenders and prints "durable <index>" only after a
// save resolves, plus occasional snapshot markers and releases. The parent SIGKILLs it at random.
import { SeededRandom, chance, randomInt } from '../../../src/base/random.js';
import { Wal } from '../../../src/wal/index.js';
import { makeEntry } from './helpers.js';

const conf = { voters: [1], votersOutgoing: [], learners: [] };

async function main(): Promise<void> {
  const [dataDir, seedText] = process.argv.slice(2);
  if (dataDir === undefined || seedText === undefined) {
    throw new Error('usage: crash-writer <dir> <seed>');
  }
  const random = new SeededRandom(BigInt(seedText));
  const options = { segmentBytes: 128 * 1024, writeBytesMax: 16 * 1024 };
  const { wal, recovered } = await Wal.open(dataDir, options);
  let next = wal.lastIndex;
  let commit = recovered.hardState.commit;
  let snapshotIndex = recovered.snapshotMeta?.index ?? 0;
  process.stdout.write(`recovered ${wal.lastIndex}\n`);
  const appender = async (): Promise<void> => {
    for (;;) {
      const index = ++next;
      const entry = makeEntry(index, 1, randomInt(random, 0, 2000));
      commit = Math.max(commit, index - 4);
      await wal.save([entry], chance(random, 0.5) ? { term: 1, vote: 1, commit } : null);
      process.stdout.write(`durable ${index}\n`);
      if (chance(random, 0.01) && commit - 50 > snapshotIndex) {
        snapshotIndex = commit - 50;
        await wal.markSnapshot({ index: snapshotIndex, term: 1, confState: conf });
        await wal.releaseBefore(snapshotIndex);
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, appender));
}

main().catch((error: unknown) => {
  process.stderr.write(`crash-writer failed: ${String(error)}\n`);
  process.exit(2);
});
