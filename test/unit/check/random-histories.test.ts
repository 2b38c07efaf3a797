// The linearizability checker against histories with known answers at scale: seeded histories
// that are linearizable by construction are always accepted; mutations that certainly break them
// (a stale read, a dropped write someone read) are always rejected; on small histories, random
// read-value swaps are judged exactly as a brute-force search judges them. Plus the speed bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { SeededRandom, randomInt } from '../../../src/base/random.js';
import {
  checkLinearizable,
  searchRegister,
  type KvOperation,
  type LinearizabilityReport,
  type OperationRecord,
} from '../../../src/check/index.js';
import { bruteForceLinearizable, generateHistory } from './generator.js';

type Kv = OperationRecord<KvOperation>;

function okWrites(history: readonly Kv[], key: string): Kv[] {
  return history.filter((r) => r.operation.key === key && r.operation.type === 'write' && r.status === 'ok');
}

/** A read made to return a value that an acknowledged later write had certainly replaced. */
function staleRead(history: readonly Kv[]): Kv[] | null {
  for (const target of history) {
    if (target.operation.type !== 'read' || target.status !== 'ok') continue;
    const writes = okWrites(history, target.operation.key);
    for (const newer of writes) {
      if (newer.completeMs >= target.invokeMs) continue;
      const older = writes.find((w) => w.completeMs < newer.invokeMs);
      if (older === undefined || older.operation.type !== 'write') continue;
      const value = older.operation.value;
      return history.map((r) => (r === target ? { ...r, result: { type: 'read', value } } : r));
    }
  }
  return null;
}

/** An acknowledged write removed although some read saw its value. */
function dropReadWrite(history: readonly Kv[]): Kv[] | null {
  for (const target of history) {
    if (target.operation.type !== 'read' || target.result?.type !== 'read') continue;
    const value = target.result.value;
    if (value === null) continue;
    const writer = history.find((r) => r.operation.type !== 'read' && r.operation.value === value);
    if (writer === undefined || writer.status !== 'ok' || writer.operation.type !== 'write') continue;
    return history.filter((r) => r !== writer);
  }
  return null;
}

/** Each reported sub-history fails on its own, and holds the writer of every value it observes. */
function assertShrunkFailures(report: LinearizabilityReport, history: readonly Kv[], label: string): void {
  assert.ok(report.failures.length > 0, label);
  for (const failure of report.failures) {
    assert.equal(searchRegister(failure.operations, null, 1_000_000).verdict, 'violation', label);
    const written = new Set(failure.operations.flatMap((r) => (r.operation.type === 'read' ? [] : [r.operation.value])));
    for (const r of failure.operations) {
      const observed = r.operation.type === 'cas' ? r.operation.expected : r.result?.type === 'read' ? r.result.value : null;
      const writer = history.some((w) => w.operation.type !== 'read' && w.status !== 'fail' && w.operation.value === observed);
      if (observed !== null && writer) assert.ok(written.has(observed), `${label}: ${failure.explanation}`);
    }
    assert.ok(failure.operations.length < 20, `${label}: shrunk to ${failure.operations.length}`);
  }
}

test('generated linearizable histories are accepted, and certain breakages rejected', () => {
  let staleCount = 0;
  let dropCount = 0;
  for (let seed = 1n; seed <= 60n; seed++) {
    const history = generateHistory({ seed, operations: 300, keys: 3, processes: 5 });
    const report = checkLinearizable(history);
    const why = report.failures.map((f) => f.explanation).join('\n');
    assert.equal(report.verdict, 'ok', `seed ${seed}: ${why}`);
    const stale = staleRead(history);
    if (stale !== null) {
      staleCount += 1;
      const staleReport = checkLinearizable(stale);
      assert.equal(staleReport.verdict, 'violation', `seed ${seed} stale read`);
      assertShrunkFailures(staleReport, stale, `seed ${seed} stale read`);
    }
    const dropped = dropReadWrite(history);
    if (dropped !== null) {
      dropCount += 1;
      const dropReport = checkLinearizable(dropped);
      assert.equal(dropReport.verdict, 'violation', `seed ${seed} dropped write`);
      assertShrunkFailures(dropReport, dropped, `seed ${seed} dropped write`);
    }
  }
  assert.ok(staleCount >= 50 && dropCount >= 50, `mutations found: ${staleCount}, ${dropCount}`);
});

test('on small histories the checker agrees with brute force, mutated or not', () => {
  let rejected = 0;
  let accepted = 0;
  for (let seed = 1n; seed <= 400n; seed++) {
    const random = new SeededRandom(seed * 7919n);
    const history = generateHistory({ seed, operations: 9, keys: 1, processes: 3, infoRate: 0.15 });
    const reads = history.filter((r) => r.result?.type === 'read');
    const values = history.flatMap((r) => (r.operation.type === 'read' ? [] : [r.operation.value]));
    let mutated = history;
    const target = reads[randomInt(random, 0, Math.max(0, reads.length - 1))];
    if (target !== undefined && values.length > 0) {
      const value = values[randomInt(random, 0, values.length - 1)] ?? null;
      mutated = history.map((r) => (r === target ? { ...r, result: { type: 'read', value } } : r));
    }
    for (const candidate of [history, mutated]) {
      const expected = bruteForceLinearizable(candidate);
      const verdict = checkLinearizable(candidate).verdict;
      assert.equal(verdict, expected ? 'ok' : 'violation', `seed ${seed}`);
      if (expected) accepted += 1;
      else rejected += 1;
    }
  }
  // Both answers occur often enough for the agreement to mean something.
  assert.ok(rejected > 50 && accepted > 400, `rejected ${rejected}, accepted ${accepted}`);
});

test('a 2,000-operation, 10-key, 5-process history checks in well under a second', (t) => {
  const history = generateHistory({ seed: 2026n, operations: 2_000, keys: 10, processes: 5 });
  checkLinearizable(history); // warm the JIT: the figure is the steady cost
  const started = performance.now();
  const report = checkLinearizable(history);
  const elapsedMs = performance.now() - started;
  t.diagnostic(`2,000 operations checked in ${elapsedMs.toFixed(1)} ms, ${report.steps} steps`);
  assert.equal(report.verdict, 'ok');
  assert.equal(report.operationsChecked, 2_000);
  assert.ok(elapsedMs < 500, `took ${elapsedMs} ms`);
});
