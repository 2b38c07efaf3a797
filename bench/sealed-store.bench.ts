// The store's record sealing (src/keys/sealed-engine.ts) in one process, same run: applies put
// commands (256-byte values) to the MVCC state machine on LMDB with deferred commits (as a node
// runs it), plain and sealed, alternating, batches of 1 and 64; medians of 7 runs of 4,096 puts.
// Prints puts/s of each and the sealed ÷ plain ratio, and the CPU time per put of each (the process's
// CPU time around the applies: on a loaded machine it moves less than wall time). Bounded: a few
// seconds, temp files removed.
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EntryType, type Entry } from '../src/raft/types.js';
import { MvccStore, defaultMvccLimits, encodeCommand, type KvEngine } from '../src/mvcc/index.js';
import { LmdbEngine } from '../src/storage/index.js';
import { keyringOf, openRecordKeys, RecordSealer, SealedEngine } from '../src/keys/index.js';

const runs = 7;
const total = 4_096;
const value = new Uint8Array(256).fill(0x76);
const root = mkdtempSync(join(tmpdir(), 'baton-sealed-bench-'));
const keyring = keyringOf([randomBytes(32)]);
let dirs = 0;

function store(sealed: boolean): { engine: LmdbEngine; store: MvccStore } {
  const directory = join(root, `db-${dirs++}`);
  const engine = LmdbEngine.open({ directory, commits: 'deferred' });
  let kv: KvEngine = engine;
  if (sealed) kv = new SealedEngine(engine, new RecordSealer(openRecordKeys(directory, keyring, { create: true, write: true }), directory));
  return { engine, store: new MvccStore(kv) };
}

function putsPerSecond(target: MvccStore, batchSize: number): { perSecond: number; cpuUs: number } {
  let index = target.appliedIndex + 1;
  let elapsedMs = 0;
  let cpuUs = 0;
  for (let done = 0; done < total; done += batchSize) {
    const batch: Entry[] = [];
    for (let i = 0; i < batchSize; i++) {
      const op = { type: 'put' as const, key: `/bench/k${(done + i) % 1024}`, value };
      batch.push({ index: index + i, term: 1, type: EntryType.normal, data: encodeCommand({ proposedAtMs: 1_000 + index + i, op }, defaultMvccLimits) });
    }
    const start = performance.now();
    const cpu = process.cpuUsage();
    target.applyBatch(batch);
    const used = process.cpuUsage(cpu);
    elapsedMs += performance.now() - start;
    cpuUs += used.user + used.system;
    index += batchSize;
  }
  return { perSecond: (total / elapsedMs) * 1000, cpuUs: cpuUs / total };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

try {
  for (const batchSize of [1, 64]) {
    const samples = { plain: [] as number[], sealed: [] as number[] };
    const cpu = { plain: [] as number[], sealed: [] as number[] };
    for (let run = 0; run < runs; run++) {
      for (const kind of run % 2 === 0 ? ['plain', 'sealed'] as const : ['sealed', 'plain'] as const) {
        const opened = store(kind === 'sealed');
        const result = putsPerSecond(opened.store, batchSize);
        samples[kind].push(result.perSecond);
        cpu[kind].push(result.cpuUs);
        await opened.engine.close();
      }
    }
    const plain = median(samples.plain);
    const sealed = median(samples.sealed);
    const plainCpu = median(cpu.plain);
    const sealedCpu = median(cpu.sealed);
    console.log(`batch ${String(batchSize).padStart(2)}: plain ${plain.toFixed(0)} puts/s, sealed ${sealed.toFixed(0)} puts/s, ratio ${(sealed / plain).toFixed(2)}x; ` +
      `CPU per put plain ${plainCpu.toFixed(1)} µs, sealed ${sealedCpu.toFixed(1)} µs, ratio ${(sealedCpu / plainCpu).toFixed(2)}x`);
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
