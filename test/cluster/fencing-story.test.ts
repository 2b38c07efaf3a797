// The seed's story on real processes, for a lock and for an elected leader: worker A owns (token
// t) and writes; A is frozen with SIGSTOP past its lease TTL; worker B becomes the owner (t' > t)
// and writes through the fencing guard; A is resumed with SIGCONT and its write with t is refused.
// Workers are separate OS processes using the client library (examples/fencing/worker.ts).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { startReportStore, type ReportStore } from '../../examples/fencing/report-store.js';
import { sleep, startTestCell, type TestCell } from './harness.js';

const workerPath = join(dirname(fileURLToPath(import.meta.url)), '../../examples/fencing/worker.js');
const ttlS = 5;

let cell: TestCell;
let store: ReportStore;
const workers: ChildProcess[] = [];

before(async () => {
  cell = await startTestCell();
  store = await startReportStore(mkdtempSync(join(tmpdir(), 'baton-reports-')));
});
after(async () => {
  for (const worker of workers) {
    worker.kill('SIGCONT');
    worker.kill('SIGKILL');
  }
  await store?.close();
  await cell?.cell.stopAll();
});

interface WorkerLine {
  readonly event: 'owner' | 'write';
  readonly token: number;
  readonly status?: number;
}

function startWorker(name: string, options: { elect: boolean; writes?: number }): { process: ChildProcess; lines: WorkerLine[]; next(predicate: (line: WorkerLine) => boolean, timeoutMs?: number): Promise<WorkerLine> } {
  const args = [workerPath, '--endpoints', cell.cell.clientUrls().join(','), '--store', store.url, '--name', name, '--ttl', String(ttlS)];
  if (options.elect) args.push('--elect');
  if (options.writes !== undefined) args.push('--writes', String(options.writes));
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  workers.push(child);
  const lines: WorkerLine[] = [];
  const waiters = new Set<() => void>();
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    lines.push(JSON.parse(line) as WorkerLine);
    for (const wake of [...waiters]) wake();
  });
  return {
    process: child,
    lines,
    next(predicate, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const found = lines.find(predicate);
          if (found === undefined) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`worker ${child.pid}: no matching line within ${timeoutMs} ms; saw ${JSON.stringify(lines.slice(-5))}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}

for (const elect of [false, true]) {
  const what = elect ? 'an elected leader' : 'a lock holder';
  test(`${what} frozen past its TTL cannot write once another owner has: the fencing guard refuses its token`, async () => {
    const name = elect ? 'story-election' : 'story-lock';
    const a = startWorker(name, { elect });
    const owned = await a.next((line) => line.event === 'owner');
    await a.next((line) => line.event === 'write' && line.status === 200);

    a.process.kill('SIGSTOP');
    const frozenAt = Date.now();
    const linesWhileFrozen = a.lines.length;
    // B queues behind A at once; it can only own after the cell expires A's lease.
    const b = startWorker(name, { elect, writes: 3 });
    const bOwned = await b.next((line) => line.event === 'owner', 60_000);
    const waitedMs = Date.now() - frozenAt;
    // A's last renewal left up to TTL/3 before the freeze; its lease runs TTL from there.
    assert.ok(waitedMs >= (ttlS * 1000 * 2) / 3 - 500, `B owned after ${waitedMs} ms: not before A's lease could end`);
    assert.ok(bOwned.token > owned.token, `B's token ${bOwned.token} > A's ${owned.token}`);
    await b.next((line) => line.event === 'write' && line.status === 200);
    assert.equal(a.lines.length, linesWhileFrozen, 'A printed nothing while frozen');

    a.process.kill('SIGCONT');
    const stale = await a.next((line) => a.lines.indexOf(line) >= linesWhileFrozen && line.event === 'write');
    assert.equal(stale.token, owned.token);
    assert.equal(stale.status, 409, 'the store refused the write A decided on before it was frozen');
    await b.next((line) => line.event === 'write' && b.lines.filter((l) => l.event === 'write').length === 3, 30_000);

    const report = store.reports.get(name);
    assert.equal(report?.token, bOwned.token, 'the report is B\'s');
    const accepted = store.attempts.filter((attempt) => attempt.report === name && attempt.accepted);
    const tokens = accepted.map((attempt) => attempt.token);
    assert.deepEqual(tokens, [...tokens].sort((x, y) => x - y), 'accepted tokens never go down');
    assert.ok(
      store.attempts.some((attempt) => attempt.report === name && attempt.token === owned.token && !attempt.accepted),
      'A\'s stale write reached the store and was refused',
    );
    a.process.kill('SIGKILL');
    await sleep(100);
  });
}
