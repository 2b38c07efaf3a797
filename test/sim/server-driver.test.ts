// The production driver (src/driver/driver.ts) under the same simulated faults and checkers as
// the sim's own driver: the sim supplies its log store, state machine, peers and timers, and
// watches its core. 200 seeds by default (BATON_SERVER_SEEDS to change), and replay by seed
// holds here too even though the driver is promise-based.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mvccStateMachine, simulateAsync } from '../../src/sim/index.js';
import { memberTimers } from '../../src/sim/server-driver.js';
import type { SimNode } from '../../src/sim/sim-node.js';
import type { WorldEvent } from '../../src/sim/types.js';

const seedCount = Number(process.env['BATON_SERVER_SEEDS'] ?? 200);

test(`the production driver keeps every invariant over ${seedCount} seeds`, async () => {
  const failures: string[] = [];
  for (let seed = 1n; seed <= BigInt(seedCount); seed++) {
    const result = await simulateAsync({ seed, driver: 'server' });
    for (const violation of result.violations) {
      failures.push(
        `seed ${seed}: ${violation.invariant} at step ${violation.step}: ${violation.detail.split('\n')[0]}\n` +
          `  reproduce with: npm run sim -- --seed ${seed} --driver server --trace`,
      );
    }
  }
  assert.deepEqual(failures, []);
});

test('a production-driver run replays byte for byte', async () => {
  const traceOf = async (seed: bigint): Promise<string[]> => {
    const lines: string[] = [];
    await simulateAsync({
      seed,
      driver: 'server',
      profile: 'chaos',
      trace: (line) => lines.push(line),
    });
    return lines;
  };
  const first = await traceOf(11n);
  assert.ok(first.length > 100, 'a run has a substantial trace');
  assert.deepEqual(await traceOf(11n), first);
});

test('seeds that found pipelined-driver bugs stay fixed (readysInFlightMax 8)', async () => {
  // 6876: an overloaded leader queued more than it could commit within the proposal timeout, so
  // nothing was acknowledged again. 40029: a restarted follower's read matched a late answer to
  // its previous incarnation's read context and was served at an older read index.
  for (const seed of [6876n, 40029n]) {
    const result = await simulateAsync({ seed, driver: 'server', profile: 'chaos' });
    assert.deepEqual(result.violations.map((v) => `${seed}: ${v.invariant}: ${v.detail}`), []);
  }
});

test('a write answered from its first copy is read where that copy applied (seed 14, MVCC)', async () => {
  // A duplicated forward appends a write twice; MVCC's Request-ID table answers the second copy
  // from the first. The checker took the second copy's index as the version a read must reach,
  // and flagged a read that correctly saw a later write applied between the copies.
  const result = await simulateAsync({ seed: 14n, driver: 'server', stateMachine: mvccStateMachine() });
  assert.deepEqual(result.violations.map((v) => `${v.invariant}: ${v.detail}`), []);
});

test('a timer that comes due while the member is paused runs when it resumes, not before, not never', () => {
  const node = { id: 1, incarnation: 1, state: 'running' } as SimNode;
  const due: { atMs: number; run: () => void }[] = [];
  const held: WorldEvent[] = [];
  const world = {
    nowMs: 0,
    at: (atMs: number, _name: string, run: () => void) => void due.push({ atMs, run }),
    hold: (_node: SimNode, event: WorldEvent) => void held.push(event),
  };
  const timers = memberTimers(node, world);
  const fired: string[] = [];
  timers.setTimeout(() => fired.push('timeout'), 100);
  timers.setTimeout(() => fired.push('cancelled'), 100).cancel();
  timers.soon?.(() => fired.push('soon'));
  node.state = 'paused';
  world.nowMs = 100;
  for (const timer of due.splice(0).sort((a, b) => a.atMs - b.atMs)) timer.run();
  assert.equal(fired.join(), '', 'a stopped process runs nothing');
  node.state = 'running'; // what World.resume does: dispatch the held events in order
  for (const event of held.splice(0)) if (event.type === 'action') event.run();
  assert.equal(fired.join(), 'soon,timeout', 'on resume, in the order they came due; a cancelled one not at all');
  // A later incarnation (a restart) never runs the earlier one's timers.
  timers.setTimeout(() => fired.push('stale'), 10);
  node.incarnation = 2;
  for (const timer of due.splice(0)) timer.run();
  assert.ok(!fired.includes('stale'));
});

test('snapshots written in the background (a later view, compaction once durable) keep every invariant', async () => {
  // As a node's snapshot thread does (src/snap/snapshot-thread.ts): the view that is written may
  // be newer than the index that made the snapshot due, and a leader's snapshot may overtake it.
  const runs = [
    ...Array.from({ length: 120 }, (_, i) => ({ seed: BigInt(3000 + i) })),
    ...Array.from({ length: 80 }, (_, i) => ({ seed: BigInt(5000 + i), profile: 'chaos' as const })),
    ...Array.from({ length: 12 }, (_, i) => ({ seed: BigInt(7000 + i), workload: 'leases' as const })),
    ...Array.from({ length: 12 }, (_, i) => ({ seed: BigInt(9000 + i), workload: 'locks' as const })),
  ];
  const failures: string[] = [];
  for (const run of runs) {
    const result = await simulateAsync({ ...run, driver: 'server', snapshots: 'background' });
    for (const v of result.violations) failures.push(`${JSON.stringify(run, (_k, x) => (typeof x === 'bigint' ? Number(x) : x))}: ${v.invariant}: ${v.detail.split('\n')[0]}`);
  }
  assert.deepEqual(failures, []);
  // The runs above do take background snapshots: seed 1's trace shows them.
  const lines: string[] = [];
  await simulateAsync({ seed: 1n, driver: 'server', snapshots: 'background', trace: (line) => lines.push(line) });
  assert.ok(lines.filter((line) => line.includes('snapshot view at')).length >= 10);
});

test('a store checkpointed instead of snapshotted (crash to the last checkpoint, snapshots made for followers) keeps every invariant', async () => {
  // As a node whose LMDB store is its durable state (src/storage/checkpointer.ts): a crash goes
  // back to the last durable checkpoint, the log is released below it less a tail, and a leader
  // makes a snapshot from its state for a follower behind the log's start.
  const runs = [
    ...Array.from({ length: 50 }, (_, i) => ({ seed: BigInt(11000 + i) })),
    ...Array.from({ length: 40 }, (_, i) => ({ seed: BigInt(12000 + i), profile: 'chaos' as const })),
    ...Array.from({ length: 15 }, (_, i) => ({ seed: BigInt(13000 + i), stateMachine: mvccStateMachine() })),
    ...Array.from({ length: 8 }, (_, i) => ({ seed: BigInt(14000 + i), workload: 'leases' as const })),
    ...Array.from({ length: 8 }, (_, i) => ({ seed: BigInt(15000 + i), workload: 'locks' as const })),
  ];
  const failures: string[] = [];
  for (const run of runs) {
    const result = await simulateAsync({ ...run, driver: 'server', snapshots: 'checkpoint' });
    const { stateMachine, ...named } = run as typeof run & { stateMachine?: unknown };
    const label = JSON.stringify({ ...named, mvcc: stateMachine !== undefined }, (_k, x) => (typeof x === 'bigint' ? Number(x) : x));
    for (const v of result.violations) failures.push(`${label}: ${v.invariant}: ${v.detail.split('\n')[0]}`);
  }
  assert.deepEqual(failures, []);
  // The runs above do checkpoint, release the log and send made snapshots: seed 9's trace shows
  // them (seed 3's did until odd seeds deferred commit notices: its trace now has 3 checkpoints).
  const lines: string[] = [];
  await simulateAsync({ seed: 9n, driver: 'server', snapshots: 'checkpoint', trace: (line) => lines.push(line) });
  assert.ok(lines.filter((line) => line.includes('checkpoint at')).length >= 5);
  assert.ok(lines.some((line) => line.includes('install snapshot')), 'a follower installed a snapshot made for it');
});
