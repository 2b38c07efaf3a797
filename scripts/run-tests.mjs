// Runs the compiled tests with Node's runner, one process per file, N files at a time. The default
// suite leaves out the slow cluster tests listed in test/long-tests.txt so that `npm test` stays
// near ten minutes on two cores; `--long` runs only those, `--all` runs everything.
//
// Why not `node --test a b c ...`: that runner interleaves the files' output and reports no time
// per file, so a slow file hides in the total. Here each file's TAP output is printed whole when it
// ends, headed by its path and wall time; the end prints the totals in the runner's own summary
// format and the slowest files. A file that runs past --file-timeout-s is killed and fails.
//
//   node scripts/run-tests.mjs [--default|--long|--all] [--concurrency N] [--file-timeout-s N] [--only SUBSTRING]
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const modes = ['--default', '--long', '--all'];
const argv = process.argv.slice(2);
const mode = modes.includes(argv[0]) ? argv[0] : '--default';
const usage = 'usage: node scripts/run-tests.mjs [--default|--long|--all] [--concurrency N] [--file-timeout-s N] [--only SUBSTRING]';
let values;
try {
  ({ values } = parseArgs({
    args: modes.includes(argv[0]) ? argv.slice(1) : argv,
    options: {
      // Default below: three files at a time for `npm test`, two for --long and --all.
      concurrency: { type: 'string' },
      'file-timeout-s': { type: 'string', default: '300' },
      only: { type: 'string' },
    },
  }));
} catch (error) {
  console.error(`${error.message}\n${usage}`);
  process.exit(2);
}
// `npm test` runs three files at a time on two cores: many cluster files wait on timers (a
// canary's fixed run, lease expiry, election timeouts), so with two the cores idled ~20% of the
// suite (1.53 cores used on average); with three, 1.81 and the suite 983 -> 801-818 s (two clean
// runs). The long files keep two: their latency bars (rolling upgrades and restarts: p99 during
// the roll) want no heavy neighbour, and beside restore and etcdctl-checks with three at a time
// rolling-upgrade-roll's p99 went 3.39x steady.
const concurrency = Number(values.concurrency ?? (mode === '--default' ? '3' : '2'));
const fileTimeoutMs = 1000 * Number(values['file-timeout-s']);
if (!Number.isInteger(concurrency) || concurrency < 1 || !(fileTimeoutMs > 0)) {
  console.error('--concurrency must be a positive integer and --file-timeout-s a positive number');
  process.exit(2);
}

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.js') ? [path] : [];
  });
}

const long = new Set(
  readFileSync('test/long-tests.txt', 'utf8')
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter(Boolean)
    .map((source) => join('dist', source.replace(/\.ts$/, '.js'))),
);
const all = testFiles('dist/test').sort();
for (const file of long) {
  if (!all.includes(file)) {
    console.error(`test/long-tests.txt names ${file}, which the build did not produce`);
    process.exit(2);
  }
}
const chosen = all
  .filter((file) => (mode === '--all' ? true : mode === '--long' ? long.has(file) : !long.has(file)))
  .filter((file) => values.only === undefined || file.includes(values.only));
// The real-process files take seconds each and the unit files milliseconds: start the slow ones
// first so that no long file starts last and runs alone at the end.
const weight = (file) => (file.includes('/cluster/') || file.includes('/faults/') ? 0 : file.includes('/sim/') ? 1 : 2);
const queue = [...chosen].sort((a, b) => weight(a) - weight(b) || a.localeCompare(b));

const totals = { tests: 0, suites: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };
const timings = [];
const failedFiles = [];
const started = Date.now();

const running = new Set();

function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

// Stopped (Ctrl-C, a CI timeout): the files' process groups do not hear the terminal's signal.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of running) killGroup(child);
    process.exit(130);
  });
}

// CPU of the processes this runner reaped (each file's process, and with it the members it
// reaped): /proc/self/stat's cutime + cstime, in clock ticks (100 a second on Linux). Read at each
// file's exit, the growth since the last read is that file's (one reap between two reads).
function reapedCpuSeconds() {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return Number.NaN;
  }
}
let lastReapedCpu = reapedCpuSeconds();

function runFile(file) {
  return new Promise((resolve) => {
    const begin = Date.now();
    // Its own process group: a file killed for its time takes the cells it started with it.
    const child = spawn(process.execPath, ['--test-reporter=tap', file], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    running.add(child);
    const chunks = [];
    child.stdout.on('data', (chunk) => chunks.push(chunk));
    child.stderr.on('data', (chunk) => chunks.push(chunk));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, fileTimeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      const seconds = (Date.now() - begin) / 1000;
      const reaped = reapedCpuSeconds();
      const cpu = reaped - lastReapedCpu;
      lastReapedCpu = reaped;
      const output = Buffer.concat(chunks).toString('utf8');
      const counts = summaryCounts(output);
      for (const key of Object.keys(totals)) totals[key] += counts[key] ?? 0;
      const ok = code === 0 && !timedOut;
      if (!ok) {
        failedFiles.push(file);
        // A file that died or hung before its summary still counts as one failure.
        if (!counts.fail) totals.fail += 1;
      }
      timings.push({ file, seconds, cpu });
      const why = timedOut ? `, killed after ${fileTimeoutMs / 1000} s` : !ok ? `, exit ${code ?? signal}` : '';
      process.stdout.write(`# file ${file} (${seconds.toFixed(1)} s, cpu ${cpu.toFixed(1)} s${why})\n${output}${output.endsWith('\n') ? '' : '\n'}`);
      resolve();
    });
  });
}

// The last lines of a TAP stream from Node's runner: "# tests 12", "# pass 11", ...
function summaryCounts(output) {
  const counts = {};
  for (const match of output.matchAll(/^# (tests|suites|pass|fail|cancelled|skipped|todo) (\d+)$/gm)) {
    counts[match[1]] = Number(match[2]);
  }
  return counts;
}

async function worker() {
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) await runFile(file);
}

await Promise.all(Array.from({ length: Math.min(concurrency, chosen.length) }, worker));

const slowest = [...timings].sort((a, b) => b.seconds - a.seconds).slice(0, 15);
process.stdout.write(`# slowest files (wall, and CPU of the file's processes):\n${slowest.map((t) => `#   ${t.seconds.toFixed(1).padStart(6)} s  cpu ${t.cpu.toFixed(1).padStart(6)} s  ${t.file}`).join('\n')}\n`);
const hungriest = [...timings].sort((a, b) => b.cpu - a.cpu).slice(0, 15);
process.stdout.write(`# most CPU:\n${hungriest.map((t) => `#   cpu ${t.cpu.toFixed(1).padStart(6)} s  ${t.seconds.toFixed(1).padStart(6)} s  ${t.file}`).join('\n')}\n`);
const cpuTotal = timings.reduce((sum, t) => sum + t.cpu, 0);
process.stdout.write(`# cpu_s ${cpuTotal.toFixed(0)} (${(cpuTotal / ((Date.now() - started) / 1000)).toFixed(2)} cores on average)\n`);
if (failedFiles.length > 0) process.stdout.write(`# failed files:\n${failedFiles.map((f) => `#   ${f}`).join('\n')}\n`);
for (const [key, value] of Object.entries(totals)) process.stdout.write(`# ${key} ${value}\n`);
process.stdout.write(`# files ${chosen.length}\n# duration_ms ${Date.now() - started}\n`);
process.exit(failedFiles.length > 0 ? 1 : 0);
