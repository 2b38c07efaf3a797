// `npm run bench:scale` (issue 22): Baton and etcd 3.4 holding N keys, each on a 3-member cell on
// loopback. When the disk holds both, both cells run at once: loaded one after the other, step 2
// alternating between them round by round (same-run ratios), then steps 3-5 on one, then on the
// other (each cell stopped and its data removed when done); otherwise (10M keys: several GB per
// member) one system after the other. For each system:
//   1. load N keys (32-byte keys, 256-byte values) in transactions of up to 128 puts, 16 in
//      flight (Baton: native HTTP /v1/txn; etcd: gRPC KV.Txn): keys/s, bytes on disk per key and
//      RSS per member, the load client's own CPU;
//   2. with N keys held, puts and linearizable gets at --clients for --seconds each, --repeats
//      rounds after an unrecorded prime (load.ts: the HTTP workloads of `npm run bench`, etcd
//      through its JSON gateway);
//   3. a follower restarted (SIGTERM, then SIGKILL) to ready, and a wiped follower removed, added
//      back as a learner, caught up and promoted, to ready;
//   4. a backup of the whole store from a follower (`baton snapshot save`, `etcdctl snapshot
//      save`) while puts run: its time, and put p99 during it against just before;
//   5. delete half the keys, compact (awaited), put them again at an offered rate below the
//      cell's own load rate: the store file's growth, and a per-second timeline (keys/s, longest
//      transaction, a probe's single puts, the longest time in which nothing completed).
// Each step's failure is reported as such and the next step still runs. Tables on stdout,
// progress on stderr; --json FILE writes every figure. Data directories live in a temp directory
// removed at the end (and on Ctrl-C).
//
//   npm run bench:scale -- --keys 100000                  quick: a few minutes
//   npm run bench:scale -- --keys 1000000 --json scale-1m.json
// Flags: --keys N (default 10,000,000) --systems baton,etcd --clients 64 --seconds S (each timed
// load; default 10, 5 at <= 100K keys) --repeats R (step 2's rounds; 3, 1 at <= 100K) --json FILE
// --batch 128 --load-txns 16 --probe-clients 8 --rewrite-share 0.5 (step 5's offered rate, a share
// of the system's own load rate) or --rewrite-keys-per-s N (the same for both) --prime-s 3
// --quota-gib 32 (etcd's backend quota) --ready-timeout-s 900 --timeline (print every second of
// step 5) --max-minutes M (a bound on the whole run) --restore-only (steps 1, 4 and 4b only).
//   4b. the backup of step 4 restored into a new 3-member cell by each system's own tool
//      (scale-restore.ts): the restore's time and the time from start to every member ready.
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BatonScaleCell } from '../src/bench/baton-scale-cell.js';
import { etcdInstallHint, etcdVersion } from '../src/bench/etcd-cell.js';
import { EtcdScaleCell } from '../src/bench/etcd-scale-cell.js';
import { progressLine } from '../src/bench/matrix.js';
import { freePorts } from '../src/bench/ports.js';
import { killRunCommands, type ScaleCell } from '../src/bench/scale-cell.js';
import {
  backupUnderLoad, churn, follower, loadKeys, replaceMember, restartMember, steadyLoad, type Log,
} from '../src/bench/scale-phases.js';
import {
  backupTable, churnTables, restoreTable, failureLines, loadTables, recoveryTable, steadyTable, stepsTable, timelineTable, type SystemRun,
} from '../src/bench/scale-report.js';
import { fileBytes } from '../src/bench/host-stats.js';
import { scaleKey, scaleValue } from '../src/bench/scale-keys.js';
import { batonRestorable, restoreInto, type RestorableCell } from '../src/bench/scale-restore.js';
import { ProcessCell } from '../src/node/testing/process-cell.js';

const distDir = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const cliPath = join(distDir, 'src', 'cli', 'main.js');

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    keys: { type: 'string', default: '10000000' },
    systems: { type: 'string', default: 'baton,etcd' },
    clients: { type: 'string', default: '64' },
    seconds: { type: 'string' },
    repeats: { type: 'string' },
    json: { type: 'string' },
    batch: { type: 'string', default: '128' },
    'load-txns': { type: 'string', default: '16' },
    'probe-clients': { type: 'string', default: '8' },
    'rewrite-share': { type: 'string', default: '0.5' },
    'rewrite-keys-per-s': { type: 'string' },
    'prime-s': { type: 'string', default: '3' },
    'quota-gib': { type: 'string', default: '32' },
    'ready-timeout-s': { type: 'string', default: '900' },
    timeline: { type: 'boolean', default: false },
    'max-minutes': { type: 'string' },
    'restore-only': { type: 'boolean', default: false },
  },
  strict: true,
});

const keys = Number(values.keys);
// --restore-only: load, back up, restore (steps 1, 4 and 4b), for the restore figures at 10M keys.
const restoreOnly = values['restore-only'] === true;
const systems = (values.systems ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
const clients = Number(values.clients);
// The quick mode (100K keys or fewer) defaults to one 5 s round of step 2.
const quick = keys <= 100_000;
const seconds = Number(values.seconds ?? (quick ? 5 : 10));
const repeats = Number(values.repeats ?? (quick ? 1 : 3));
const batch = Number(values.batch);
const loadTxns = Number(values['load-txns']);
const probeClients = Number(values['probe-clients']);
const rewriteShare = Number(values['rewrite-share']);
const rewriteKeysPerS = values['rewrite-keys-per-s'] === undefined ? undefined : Number(values['rewrite-keys-per-s']);
const primeS = Number(values['prime-s']);
const quotaBytes = Number(values['quota-gib']) * 2 ** 30;
const readyTimeoutMs = Number(values['ready-timeout-s']) * 1000;
if (!(Number.isInteger(keys) && keys >= 1000 && keys < 2 ** 32)) throw new Error('--keys takes an integer >= 1000');
if (!systems.every((s) => s === 'baton' || s === 'etcd') || systems.length === 0) throw new Error('--systems takes baton and/or etcd');
if (!(Number.isInteger(clients) && clients >= 1 && seconds > 0 && seconds <= 600)) throw new Error('--clients >= 1, 0 < --seconds <= 600');
if (!(Number.isInteger(repeats) && repeats >= 1 && repeats <= 20)) throw new Error('--repeats takes 1..20');
if (!(Number.isInteger(batch) && batch >= 1 && batch <= 128)) throw new Error('--batch takes 1..128 (both systems allow 128 operations per txn)');
if (!(Number.isInteger(loadTxns) && loadTxns >= 1 && loadTxns <= 256)) throw new Error('--load-txns takes 1..256');
if (!(Number.isInteger(probeClients) && probeClients >= 1 && probeClients <= 256)) throw new Error('--probe-clients takes 1..256');
if (!(rewriteShare > 0 && rewriteShare <= 1)) throw new Error('--rewrite-share takes (0, 1]: a share of the system\'s own load rate');
if (rewriteKeysPerS !== undefined && !(rewriteKeysPerS > 0)) throw new Error('--rewrite-keys-per-s takes a rate > 0');
if (!(primeS >= 0 && primeS <= 60)) throw new Error('--prime-s takes 0..60');
// A bound on the whole run: roughly 12 minutes per million keys per system, and 20 more.
const maxMinutes = Number(values['max-minutes'] ?? Math.ceil(20 + (12 * systems.length * keys) / 1e6));

const log: Log = (line) => process.stderr.write(`${line}\n`);
const out = (text: string): void => {
  process.stdout.write(`${text}\n`);
};

const workDir = mkdtempSync(join(tmpdir(), 'baton-scale-'));
const cells = new Set<ScaleCell>();
let cleaning: Promise<void> | null = null;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    killRunCommands();
    for (const cell of cells) await cell.stopAll().catch((e: Error) => log(`cleanup: ${e.message}`));
    rmSync(workDir, { recursive: true, force: true });
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`bench:scale: ${signal}, stopping the cell and removing ${workDir}`);
    void cleanup().then(() => process.exit(130));
  });
}
const watchdog = setTimeout(() => {
  log(`bench:scale: still running after ${maxMinutes} minutes (--max-minutes); stopping`);
  void cleanup().then(() => process.exit(1));
}, maxMinutes * 60_000);

async function startBaton(dir: string): Promise<ScaleCell> {
  const ports = await freePorts(6);
  const processes = new ProcessCell({
    dataDir: dir,
    output: 'pipe',
    members: [0, 1, 2].map((i) => ({ name: `n${i + 1}`, clientPort: ports[i] as number, peerPort: ports[i + 3] as number })),
  });
  const cell = new BatonScaleCell(processes, cliPath, Math.max(loadTxns, clients), readyTimeoutMs);
  processes.startAll();
  await processes.waitReady(120_000);
  return cell;
}

async function startEtcd(dir: string): Promise<ScaleCell> {
  const ports = await freePorts(6);
  const cell = new EtcdScaleCell({
    dataDir: dir,
    members: [0, 1, 2].map((i) => ({ name: `e${i + 1}`, clientPort: ports[i] as number, peerPort: ports[i + 3] as number })),
    quotaBackendBytes: quotaBytes,
    workers: loadTxns,
    readyTimeoutMs,
  });
  cell.startAll();
  await cell.waitReady();
  return cell;
}

/** A new cell for step 4b, made from `file` by the system's own restore tool, not started yet. */
async function restorable(system: string, dir: string): Promise<RestorableCell> {
  const last = scaleKey(keys - 1);
  if (system === 'baton') return batonRestorable(dir, cliPath, last, readyTimeoutMs);
  const ports = await freePorts(6);
  const cell = new EtcdScaleCell({
    dataDir: dir,
    members: [0, 1, 2].map((i) => ({ name: `e${i + 1}`, clientPort: ports[i] as number, peerPort: ports[i + 3] as number })),
    quotaBackendBytes: quotaBytes,
    workers: 3,
    readyTimeoutMs,
  });
  return {
    cell,
    tool: 'etcdctl snapshot restore (per member)',
    restore: (file) => cell.restoreMembers(file),
    startAll: () => cell.startAll(),
    async verify() {
      const answer = await fetch(`http://127.0.0.1:${ports[0]}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from(last).toString('base64') }) });
      const body = await answer.json() as { kvs?: { value: string }[] };
      return answer.status === 200 && body.kvs?.[0]?.value === scaleValue.toString('base64') ? null : `range ${last}: ${answer.status}`;
    },
  };
}

/** Step 4b: the backup restored into a new cell, timed to ready; the new cell is removed after. */
async function restoreBackup(system: string, file: string): Promise<ReturnType<typeof restoreInto>> {
  const dir = join(workDir, `${system}-restored`);
  const made = await restorable(system, dir);
  cells.add(made.cell);
  try {
    return await restoreInto(made, file, readyTimeoutMs);
  } finally {
    await made.cell.stopAll().catch((e: Error) => log(`stopping the restored ${system}: ${e.message}`));
    cells.delete(made.cell);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs one step; a failure is recorded (and printed) and the bench goes on. */
async function step<T>(run: SystemRun, name: string, body: () => Promise<T>): Promise<T | undefined> {
  const began = performance.now();
  const loadBefore = loadavg()[0] ?? 0;
  log(`bench:scale: ${run.system}: ${name} (load average ${loadBefore.toFixed(1)})`);
  const finish = (): void => {
    const seconds = (performance.now() - began) / 1000;
    run.steps.push({ step: name, seconds, loadAverageBefore: loadBefore, loadAverageAfter: loadavg()[0] ?? 0 });
  };
  try {
    const value = await body();
    finish();
    log(`bench:scale: ${run.system}: ${name} done in ${((performance.now() - began) / 1000).toFixed(1)} s`);
    return value;
  } catch (error) {
    finish();
    const message = (error as Error).stack ?? String(error);
    log(`bench:scale: ${run.system}: ${name} FAILED: ${message}`);
    run.failures.push({ step: name, error: (error as Error).message });
    return undefined;
  }
}

interface Started { readonly cell: ScaleCell; readonly run: SystemRun; readonly dir: string }

/** Starts a system's cell and loads it (step 1). */
async function startAndLoad(system: string): Promise<Started> {
  const version = system === 'etcd' ? (etcdVersion() ?? 'etcd') : 'baton (this build)';
  const dir = join(workDir, system);
  const cell = system === 'baton' ? await startBaton(dir) : await startEtcd(dir);
  cells.add(cell);
  const run: SystemRun = { system, version, dataPath: cell.dataPath, put: [], getLin: [], restarts: [], failures: [], steps: [] };
  run.load = await step(run, `load ${keys} keys`, () => loadKeys(cell, { keys, batch, workers: loadTxns, log }));
  return { cell, run, dir };
}

/** Step 2 on every loaded system, round by round, the order alternating between rounds. */
async function steadyRounds(started: readonly Started[]): Promise<void> {
  const loaded = started.filter((s) => s.run.load !== undefined);
  // Unrecorded first (Node's JIT warms up on the paths these workloads take; etcd's Go needs none).
  for (const { cell, run } of primeS > 0 ? loaded : []) {
    for (const workload of ['put', 'get-lin'] as const) {
      await step(run, `prime ${workload}`, () => steadyLoad(cell, { workload, keys, clients, seconds: primeS }));
    }
  }
  for (let round = 0; round < repeats; round++) {
    const order = round % 2 === 0 ? loaded : [...loaded].reverse();
    for (const workload of ['put', 'get-lin'] as const) {
      for (const { cell, run } of order) {
        const result = await step(run, `${workload} x${clients}, round ${round + 1}`, () =>
          steadyLoad(cell, { workload, keys, clients, seconds }));
        if (result === undefined) continue;
        log(progressLine(result));
        (workload === 'put' ? run.put : run.getLin).push(result);
      }
    }
  }
}

/** Step 5's offered rewrite rate: --rewrite-keys-per-s, else a share of the system's load rate. */
function rewriteRate(run: SystemRun): number {
  return rewriteKeysPerS ?? Math.max(100, rewriteShare * (run.load?.keysPerSecond ?? 0));
}

/** Steps 3-5 on one system, then its cell is stopped and its data removed. */
async function recoverBackupChurn({ cell, run, dir }: Started): Promise<void> {
  try {
    if (run.load === undefined) return; // nothing else means anything without the data
    for (const signal of restoreOnly ? [] : ['SIGTERM', 'SIGKILL'] as const) {
      const restart = await step(run, `restart a follower (${signal})`, () => restartMember(cell, { signal, timeoutMs: readyTimeoutMs }));
      if (restart !== undefined) run.restarts.push(restart);
    }
    if (!restoreOnly) run.replace = await step(run, 'replace a wiped follower', () => replaceMember(cell, log));
    const backupFile = join(workDir, `${run.system}-backup.db`);
    run.backup = await step(run, 'backup under puts', () =>
      backupUnderLoad(cell, { keys, clients, seconds, file: backupFile, log }));
    if (run.backup !== undefined) run.restore = await step(run, 'restore the backup into a new cell', () => restoreBackup(run.system, backupFile));
    rmSync(backupFile, { force: true });
    if (restoreOnly) return;
    run.churn = await step(run, 'delete half, compact, rewrite', () => churn(cell, { keys, batch, workers: loadTxns, probeClients, rewriteKeysPerSecond: rewriteRate(run), log }));
    if (run.churn !== undefined && cell.shrink !== undefined) {
      const shrink = cell.shrink.bind(cell);
      const shrunk = await step(run, 'defragment a follower', async () => {
        const member = await follower(cell);
        return { ...(await shrink(member)), member, fileBytes: fileBytes(cell.storeFile(member)) };
      });
      if (shrunk !== undefined) run.churn = { ...run.churn, shrink: shrunk };
    }
  } finally {
    await cell.stopAll().catch((e: Error) => log(`stopping ${run.system}: ${e.message}`));
    cells.delete(cell);
    rmSync(dir, { recursive: true, force: true });
  }
}

function report(runs: readonly SystemRun[], together: boolean): void {
  const how = together ? 'both cells up together, step 2 alternating between them' : 'one system after the other';
  out(`\nbench:scale: ${keys} keys of 32 bytes with 256-byte values, 3-member cells on loopback, ${how}`);
  out(runs.map((r) => `  ${r.system}: ${r.version}; load through ${r.dataPath}`).join('\n'));
  out(`\n1. Load (${batch} puts per txn, ${loadTxns} txns in flight)`);
  out(loadTables(runs));
  out(`\n2. With ${keys} keys held: ${clients} clients, ${repeats} round(s) of ${seconds} s per workload, medians (HTTP: Baton native, etcd JSON gateway)`);
  out(steadyTable(runs));
  out('\n3. A follower restarted, and a wiped follower replaced (to ready: health/readyz and a linearizable get through it)');
  out(recoveryTable(runs));
  out(`\n4. Backup of the whole store from a follower while ${clients} clients put (p99 during vs the ${seconds} s before)`);
  out(backupTable(runs));
  out('\n4b. The backup restored into a new 3-member cell by the system\'s own tool, then started: to every member ready and serving a linearizable get');
  out(restoreTable(runs));
  const offered = rewriteKeysPerS === undefined ? `${rewriteShare} of its own load rate` : `${rewriteKeysPerS} keys/s`;
  out(`\n5. Delete every other key (${batch} per txn, ${loadTxns} in flight), compact at the revision after the deletes (awaited), ` +
    `put the same keys again offered at ${offered}; ${probeClients} probe clients put single keys all along; pauses counted over the compaction and the rewrite`);
  out(churnTables(runs));
  for (const r of runs) {
    if (r.churn === undefined) continue;
    out(`\n${r.system}: ${values.timeline ? 'every second' : 'the five seconds with the longest pauses'} (compaction: ${r.churn.compactNote})`);
    out(timelineTable(r, values.timeline === true));
  }
  out('\nSteps, their wall time and the machine\'s 1-minute load average before / after (2 cores, shared)');
  out(stepsTable(runs));
  out(`\n${failureLines(runs)}`);
}

function freeDiskBytes(): number {
  try {
    const stat = statfsSync(workDir);
    return stat.bavail * stat.bsize;
  } catch {
    return Number.NaN;
  }
}

/** Three members at ~1.1 KiB/key, a snapshot file for the wiped member and a backup file. */
function neededBytes(): number {
  return keys * 1200 * 5;
}

function diskWarning(): void {
  const free = freeDiskBytes();
  log(`bench:scale: ${workDir}: ${(free / 2 ** 30).toFixed(1)} GiB free, about ${(neededBytes() / 2 ** 30).toFixed(1)} GiB needed per system`);
  if (free < neededBytes()) log('bench:scale: WARNING: the disk may fill up before the end');
}

try {
  if (systems.includes('etcd') && etcdVersion() === null) throw new Error(etcdInstallHint);
  diskWarning();
  // Both cells at once when the disk holds both, so step 2 alternates between them (same-run
  // ratios); otherwise (10M keys) one system after the other.
  const together = freeDiskBytes() > 2.5 * neededBytes();
  log(`bench:scale: ${together ? 'both cells up together, step 2 interleaved' : 'one system after the other (disk)'}`);
  const runs: SystemRun[] = [];
  if (together) {
    const started: Started[] = [];
    for (const system of systems) started.push(await startAndLoad(system));
    if (!restoreOnly) await steadyRounds(started);
    for (const s of started) await recoverBackupChurn(s);
    runs.push(...started.map((s) => s.run));
  } else {
    for (const system of systems) {
      const s = await startAndLoad(system);
      if (!restoreOnly) await steadyRounds([s]);
      await recoverBackupChurn(s);
      runs.push(s.run);
    }
  }
  report(runs, together);
  if (values.json !== undefined) {
    writeFileSync(values.json, `${JSON.stringify({ keys, clients, seconds, repeats, batch, loadTxns, together, runs }, null, 2)}\n`);
    log(`bench:scale: figures written to ${values.json}`);
  }
  if (runs.some((r) => r.failures.length > 0)) process.exitCode = 1;
} catch (error) {
  log(`bench:scale failed: ${(error as Error).stack ?? String(error)}`);
  process.exitCode = 1;
} finally {
  clearTimeout(watchdog);
  await cleanup();
}
