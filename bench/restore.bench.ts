// `npm run bench:restore` (issue 27): a backup of N keys (default 10M; 32-byte keys, 256-byte
// values: the scale bench's data set) restored into a NEW 3-member cell with `baton snapshot
// restore`, one call per member, then the members started until each is ready and a linearizable
// get of a held key answers: the restore's time, start to ready, and the total (goal: <= 60 s).
// The backup is made without a cell (bench/synthetic-backup.ts: the state machine applies
// the puts and writes its snapshot stream, the file `baton snapshot save` would give), because
// loading 10M keys through the API alone takes about an hour here; --backup FILE reuses a file
// (e.g. one kept with --keep-backup FILE, or a real `baton snapshot save`).
//
//   npm run bench:restore                                  10M keys (~15 GB of temporary disk)
//   npm run bench:restore -- --keys 1000000
//   npm run bench:restore -- --keys 10000000 --keep-backup /tmp/b10m.snap
//   npm run bench:restore -- --backup /tmp/b10m.snap --keys 10000000
// Flags: --keys N (the key count; with --backup, the count the file holds)  --backup FILE
// --keep-backup FILE  --ready-timeout-s S (default 900)  --json FILE  --concurrent (the three
// members' restores at once, as three machines would run them; default one after another)
// Everything else lives in a temp directory removed at the end (and on Ctrl-C).
import { mkdtempSync, renameSync, rmSync, statSync, statfsSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { table } from '../src/bench/report.js';
import { scaleKey } from '../src/bench/scale-keys.js';
import { batonRestorable, restoreInto } from '../src/bench/scale-restore.js';
import { writeSyntheticBackup } from './synthetic-backup.js';

const distDir = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const cliPath = join(distDir, 'src', 'cli', 'main.js');

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    keys: { type: 'string', default: '10000000' },
    backup: { type: 'string' },
    'keep-backup': { type: 'string' },
    'ready-timeout-s': { type: 'string', default: '900' },
    json: { type: 'string' },
    concurrent: { type: 'boolean', default: false },
  },
  strict: true,
});
const keys = Number(values.keys);
const readyTimeoutMs = Number(values['ready-timeout-s']) * 1000;
if (!(Number.isSafeInteger(keys) && keys >= 1 && keys < 2 ** 32)) throw new Error('--keys: an integer 1..2^32-1');
if (!(readyTimeoutMs > 0)) throw new Error('--ready-timeout-s > 0');

const log = (line: string): void => void process.stderr.write(`${line}\n`);
const workDir = mkdtempSync(join(values['keep-backup'] === undefined ? tmpdir() : dirname(resolve(values['keep-backup'])), 'baton-restore-bench-'));
let cleanup: (() => Promise<void>) | null = null;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`bench:restore: ${signal}, stopping`);
    void (cleanup?.() ?? Promise.resolve()).finally(() => {
      rmSync(workDir, { recursive: true, force: true });
      process.exit(130);
    });
  });
}

/** Free bytes where `dir` lives: a 10M-key run needs the backup plus three stores. */
function freeBytes(dir: string): number {
  const stats = statfsSync(dir);
  return stats.bavail * stats.bsize;
}

async function main(): Promise<void> {
  const figures: Record<string, number | string> = { keys, loadAverageBefore: loadavg()[0] ?? 0 };
  let file = values.backup === undefined ? null : resolve(values.backup);
  if (file === null) {
    // About 1 KB per key for the backup and each of three stores, with room to spare.
    const needed = keys * 4 * 1024;
    if (freeBytes(workDir) < needed) throw new Error(`${workDir}: ${(needed / 2 ** 30).toFixed(1)} GiB free needed for ${keys} keys`);
    file = join(workDir, 'backup.snap');
    log(`bench:restore: making a backup of ${keys} keys (the state machine applies them, then writes its snapshot)`);
    const made = await writeSyntheticBackup(file, keys, workDir, log);
    Object.assign(figures, { backupLoadSeconds: made.loadSeconds, backupWriteSeconds: made.snapshotSeconds });
  }
  figures.backupBytes = statSync(file).size;
  log(`bench:restore: backup ${file}, ${(Number(figures.backupBytes) / 2 ** 20).toFixed(0)} MiB; restoring into a new 3-member cell`);
  const dir = join(workDir, 'restored');
  const made = await batonRestorable(dir, cliPath, scaleKey(keys - 1), readyTimeoutMs, values.concurrent === true);
  figures.tool = made.tool;
  cleanup = () => made.cell.stopAll();
  try {
    const restored = await restoreInto(made, file, readyTimeoutMs);
    Object.assign(figures, {
      restoreSeconds: restored.restoreSeconds, readySeconds: restored.readySeconds, totalSeconds: restored.totalSeconds, revision: restored.revision,
      storeBytes: statSync(made.cell.storeFile('n1')).size,
    });
  } finally {
    await made.cell.stopAll();
    cleanup = null;
  }
  figures.loadAverageAfter = loadavg()[0] ?? 0;
  const keep = values['keep-backup'];
  if (keep !== undefined && values.backup === undefined) renameSync(file, resolve(keep));
  const f = (x: unknown, digits = 1): string => (typeof x === 'number' ? x.toFixed(digits) : '-');
  process.stdout.write(`\n${figures.tool}:\n${table(['keys', 'backup MiB', 'restore (3 members) s', 'start to ready s', 'total s', 'store MiB per member', 'load average before/after'], [[
    String(keys), f(Number(figures.backupBytes) / 2 ** 20, 0), f(figures.restoreSeconds), f(figures.readySeconds), f(figures.totalSeconds),
    f(Number(figures.storeBytes) / 2 ** 20, 0), `${f(figures.loadAverageBefore)} / ${f(figures.loadAverageAfter)}`,
  ]])}\n`);
  if (figures.backupLoadSeconds !== undefined) {
    process.stdout.write(`backup made in ${f(figures.backupLoadSeconds)} s (apply) + ${f(figures.backupWriteSeconds)} s (snapshot to the file)\n`);
  }
  if (values.json !== undefined) writeFileSync(values.json, `${JSON.stringify(figures, null, 2)}\n`);
}

try {
  await main();
} finally {
  rmSync(workDir, { recursive: true, force: true });
}
