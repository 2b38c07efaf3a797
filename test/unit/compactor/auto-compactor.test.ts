// Automatic compaction under fake time (src/compactor): what the compactor proposes and when, in
// revision mode (every check, `retention` revisions behind) and periodic mode (etcd 3.4: samples
// every tenth of the retention, compacts to the revision seen a retention ago); only the leader
// proposes; a failed proposal is asked again later and never piles up behind one in flight.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompactedError, UnavailableError } from '../../../src/base/errors.js';
import { AutoCompactor, type AutoCompactionPolicy, type CompactorCell } from '../../../src/compactor/index.js';
import { FakeTimers, settle } from '../base/fake-timers.js';

const minute = 60_000;
const hour = 60 * minute;

type Answer = 'apply' | 'hang' | 'throw' | Error;

/** A cell whose revision follows the clock (`writesPerSecond`) and that applies compactions. */
class FakeCell implements CompactorCell {
  leader = true;
  compactRev = 0;
  writesPerSecond = 1;
  readonly proposals: { atMs: number; revision: number }[] = [];
  /** How the next proposals are answered (then 'apply'). */
  answers: Answer[] = [];
  private hung: (() => void)[] = [];
  private base = 100;
  private sinceMs = 0;

  constructor(private readonly timers: FakeTimers) {}

  revision(): number {
    return this.base + Math.floor(((this.timers.nowMs - this.sinceMs) * this.writesPerSecond) / 1000);
  }
  /** Changes the write rate from now on. */
  setRate(writesPerSecond: number): void {
    this.base = this.revision();
    this.sinceMs = this.timers.nowMs;
    this.writesPerSecond = writesPerSecond;
  }
  compactRevision(): number {
    return this.compactRev;
  }
  isLeader(): boolean {
    return this.leader;
  }
  compact(revision: number): Promise<unknown> {
    this.proposals.push({ atMs: this.timers.nowMs, revision });
    const answer = this.answers.shift() ?? 'apply';
    if (answer === 'throw') throw new Error('thrown before any promise');
    if (answer === 'hang') return new Promise((resolve) => this.hung.push(() => this.apply(revision, resolve)));
    if (answer instanceof Error) return Promise.reject(answer);
    return new Promise((resolve) => this.apply(revision, resolve));
  }
  releaseHung(): void {
    for (const release of this.hung.splice(0)) release();
  }
  private apply(revision: number, resolve: (value: unknown) => void): void {
    assert.ok(revision > this.compactRev, `proposed ${revision} at or below the compact revision ${this.compactRev}`);
    assert.ok(revision < this.revision(), `proposed ${revision} at or above the revision ${this.revision()}`);
    this.compactRev = revision;
    resolve({ compactRevision: revision });
  }
}

function setup(policy: Exclude<AutoCompactionPolicy, { mode: 'off' }>, revisionCheckMs = 5 * minute) {
  const timers = new FakeTimers();
  const cell = new FakeCell(timers);
  const warnings: string[] = [];
  const compactor = new AutoCompactor(cell, { policy, revisionCheckMs, timers, log: { info: () => {}, warn: (m) => warnings.push(m) } });
  compactor.start();
  return { timers, cell, compactor, warnings };
}

test('revision mode: every check compacts to `retention` revisions behind; nothing when idle or too young', async () => {
  const { timers, cell } = setup({ mode: 'revision', retentionRevisions: 1000 });
  // The revision starts at 100 and grows by one a second: at 5 minutes, 400 (not 1000 behind anything).
  await timers.advance(5 * minute);
  assert.equal(cell.proposals.length, 0);
  await timers.advance(5 * minute); // revision 700
  assert.equal(cell.proposals.length, 0);
  cell.setRate(10);
  await timers.advance(5 * minute); // revision 3700
  assert.deepEqual(cell.proposals, [{ atMs: 15 * minute, revision: 2700 }]);
  assert.equal(cell.compactRevision(), 2700);
  await timers.advance(4 * minute);
  assert.equal(cell.proposals.length, 1, 'nothing between checks');
  await timers.advance(1 * minute); // revision 6700
  assert.deepEqual(cell.proposals.at(-1), { atMs: 20 * minute, revision: 5700 });
  // Idle: the candidate stays where the last compaction put the point, so nothing is proposed.
  cell.setRate(0);
  await timers.advance(40 * minute);
  assert.deepEqual(cell.proposals.map((p) => p.revision), [2700, 5700]);
});

test('revision mode: a compaction made by a client past the candidate is respected (never proposed below it)', async () => {
  const { timers, cell } = setup({ mode: 'revision', retentionRevisions: 100 }, 1000);
  cell.compactRev = 90; // a client compacted to 90; the candidate stays below it for a while
  await timers.advance(60_000);
  assert.equal(cell.proposals.length, 0);
  await timers.advance(1000); // revision 161: candidate 61 ... still below
  assert.equal(cell.proposals.length, 0);
  await timers.advance(30_000); // revision 191: candidate 91, above the client's 90
  assert.deepEqual(cell.proposals, [{ atMs: 91_000, revision: 91 }]);
  cell.proposals.length = 0;
  cell.setRate(0);
  await timers.advance(10_000);
  assert.equal(cell.proposals.length, 0);
});

test('periodic mode (10m): samples every minute, first compaction after 10 minutes to the revision seen then', async () => {
  const { timers, cell } = setup({ mode: 'periodic', retentionMs: 10 * minute });
  await timers.advance(10 * minute - 1);
  assert.deepEqual(cell.proposals, [], 'nothing before a whole retention has passed');
  await timers.advance(1);
  // The sample at 0 (revision 100) is the one a retention old.
  assert.deepEqual(cell.proposals, [{ atMs: 10 * minute, revision: 100 }]);
  await timers.advance(9 * minute);
  assert.equal(cell.proposals.length, 1, 'at most one compaction per retention');
  await timers.advance(1 * minute);
  // At 20 minutes: the sample taken at 10 minutes (revision 100 + 600).
  assert.deepEqual(cell.proposals.at(-1), { atMs: 20 * minute, revision: 700 });
  await timers.advance(10 * minute);
  assert.deepEqual(cell.proposals.at(-1), { atMs: 30 * minute, revision: 1300 });
});

test('periodic mode (2h): samples every 6 minutes, compacts hourly once two hours have passed, keeping two hours', async () => {
  const { timers, cell } = setup({ mode: 'periodic', retentionMs: 2 * hour });
  await timers.advance(2 * hour - 1);
  assert.equal(cell.proposals.length, 0);
  await timers.advance(1);
  assert.deepEqual(cell.proposals, [{ atMs: 2 * hour, revision: 100 }]);
  await timers.advance(1 * hour);
  assert.deepEqual(cell.proposals.at(-1), { atMs: 3 * hour, revision: 100 + 3600 });
  await timers.advance(1 * hour);
  assert.deepEqual(cell.proposals.at(-1), { atMs: 4 * hour, revision: 100 + 2 * 3600 });
  assert.equal(cell.proposals.length, 3);
});

test('periodic mode, bare seconds (90s): samples every 9 s; an idle cell keeps its newest revision readable', async () => {
  const { timers, cell } = setup({ mode: 'periodic', retentionMs: 90_000 });
  cell.setRate(0); // revision stays 100
  await timers.advance(90_000);
  // The sample a retention ago is the current revision: compacted to one below it, never at it.
  assert.deepEqual(cell.proposals, [{ atMs: 90_000, revision: 99 }]);
  await timers.advance(10 * 90_000);
  assert.equal(cell.proposals.length, 1, 'nothing left to compact while idle');
});

test('only the leader proposes; a follower keeps sampling, so a new leader compacts at once with a full window', async () => {
  const { timers, cell } = setup({ mode: 'periodic', retentionMs: 10 * minute });
  cell.leader = false;
  await timers.advance(25 * minute);
  assert.deepEqual(cell.proposals, [], 'a follower never proposes');
  cell.leader = true;
  await timers.advance(1 * minute);
  // At 26 minutes: the sample from 16 minutes, which the member took while it followed.
  assert.deepEqual(cell.proposals, [{ atMs: 26 * minute, revision: 100 + 16 * 60 }]);
  cell.leader = false;
  await timers.advance(60 * minute);
  assert.equal(cell.proposals.length, 1);
});

test('a failed proposal is asked again at the next tick; one in flight is never joined by another', async () => {
  const { timers, cell, warnings } = setup({ mode: 'periodic', retentionMs: 10 * minute });
  cell.answers = [new UnavailableError('no leader'), 'hang'];
  await timers.advance(10 * minute);
  assert.deepEqual(cell.proposals, [{ atMs: 10 * minute, revision: 100 }]);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0] as string, /failed \(asked again in 60000 ms\): no leader/);
  await timers.advance(1 * minute);
  // Retried one sample interval later, with the sample a retention old by then; this one hangs.
  assert.deepEqual(cell.proposals.at(-1), { atMs: 11 * minute, revision: 160 });
  await timers.advance(30 * minute);
  assert.equal(cell.proposals.length, 2, 'no second proposal while one is in flight');
  assert.ok(timers.pending() === 1, 'one tick scheduled, not one per missed interval');
  cell.releaseHung(); // it applies late; the schedule resumes from then
  await settle();
  assert.equal(cell.compactRevision(), 160);
  await timers.advance(9 * minute);
  assert.equal(cell.proposals.length, 2);
  await timers.advance(1 * minute);
  assert.deepEqual(cell.proposals.at(-1), { atMs: 51 * minute, revision: 100 + 41 * 60 });
});

test('a compact that throws at once is a failure like any other: asked again at the next tick', async () => {
  const { timers, cell, warnings } = setup({ mode: 'revision', retentionRevisions: 10 }, 1000);
  cell.answers = ['throw'];
  await timers.advance(1000);
  await timers.advance(1000);
  assert.deepEqual(cell.proposals.map((p) => p.atMs), [1000, 2000]);
  assert.match(warnings[0] as string, /thrown before any promise/);
});

test('a compaction refused as already compacted counts as done (etcd ErrCompacted), not as a failure', async () => {
  const { timers, cell, warnings } = setup({ mode: 'revision', retentionRevisions: 10 }, 1000);
  cell.answers = [new CompactedError(500)];
  await timers.advance(1000);
  assert.equal(cell.proposals.length, 1);
  assert.deepEqual(warnings, []);
});

test('stop: no tick after it, and an answer arriving later changes nothing', async () => {
  const { timers, cell, compactor } = setup({ mode: 'revision', retentionRevisions: 10 }, 1000);
  cell.answers = ['hang'];
  await timers.advance(1000);
  compactor.stop();
  assert.equal(timers.pending(), 0);
  cell.releaseHung();
  await timers.advance(60_000);
  assert.equal(cell.proposals.length, 1);
});
