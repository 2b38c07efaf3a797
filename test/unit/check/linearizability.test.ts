// Hand-made histories with known answers: the classic anomalies (stale read, lost write, a read
// of a failed write, CAS anomalies, a value read before its write began) must be rejected with
// the key and a minimal set of operations; good histories with many valid orders and with
// timed-out operations that did or did not happen must be accepted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkLinearizable, type OperationRecord, type KvOperation } from '../../../src/check/index.js';
import { cas, read, write } from './builders.js';

function rejects(history: OperationRecord<KvOperation>[], size: number, key = 'x'): string {
  const report = checkLinearizable(history);
  assert.equal(report.verdict, 'violation');
  assert.equal(report.failures.length, 1);
  const failure = report.failures[0]!;
  assert.equal(failure.key, key);
  assert.equal(failure.operations.length, size, failure.explanation);
  assert.match(failure.explanation, new RegExp(`key "${key}"`));
  return failure.explanation;
}

function accepts(history: OperationRecord<KvOperation>[]): void {
  const report = checkLinearizable(history);
  assert.equal(report.verdict, 'ok', report.failures.map((f) => f.explanation).join('\n'));
}

test('a stale read is rejected with the two writes and the read, nothing else', () => {
  const explanation = rejects(
    [
      write(1, 0, 10, 'x', 'a'),
      write(1, 20, 30, 'x', 'b'),
      read(2, 40, 50, 'x', 'a'),
      read(3, 0, 5, 'y', null), // another key, fine, not in the failure
    ],
    3,
  );
  // The other key's read is not part of the story.
  assert.doesNotMatch(explanation, /read y/);
  assert.match(explanation, /read x -> "a"/);
});

test('a lost write (read back the initial value after an acknowledged write) is rejected', () => {
  const explanation = rejects([write(1, 0, 10, 'x', 'a'), read(2, 20, 30, 'x', null)], 2);
  assert.match(explanation, /write x := "a"/);
  assert.match(explanation, /read x -> ∅/);
});

test('a read of a failed write is rejected; a read of a timed-out write is accepted', () => {
  rejects([write(1, 0, 10, 'x', 'a', 'fail'), read(2, 20, 30, 'x', 'a')], 1);
  accepts([write(1, 0, 10, 'x', 'a', 'info'), read(2, 20, 30, 'x', 'a')]);
});

test('a value read before its write began is rejected, even with the write acknowledged', () => {
  rejects([read(2, 0, 5, 'x', 'a'), write(1, 10, 20, 'x', 'a')], 2);
  // Touching endpoints count as concurrent: a coarse clock must not invent an order.
  accepts([read(2, 0, 10, 'x', 'a'), write(1, 10, 20, 'x', 'a')]);
});

test('CAS anomalies: two swaps from one value, a swap from a value never there, a wrong refusal', () => {
  rejects(
    [
      write(1, 0, 10, 'x', 'a'),
      cas(2, 20, 40, 'x', 'a', 'b', true),
      cas(3, 20, 40, 'x', 'a', 'c', true),
    ],
    3,
  );
  rejects([write(1, 0, 10, 'x', 'a'), cas(2, 20, 30, 'x', 'z', 'b', true)], 1);
  rejects([write(1, 0, 10, 'x', 'a'), cas(2, 20, 30, 'x', 'a', 'b', false)], 2);
  // A refused CAS is fine when a concurrent write could have moved the value first.
  accepts([
    write(1, 0, 10, 'x', 'a'),
    cas(2, 20, 30, 'x', 'a', 'b', false),
    write(3, 15, 35, 'x', 'c'),
    read(1, 40, 50, 'x', 'c'),
  ]);
});

test('the shrunk history keeps the writers of observed values, through CAS chains', () => {
  // Key x is broken by the stale read at the end; the chain write -> cas -> read must not be
  // reported as "a CAS from a value never written".
  const explanation = rejects(
    [
      write(1, 0, 10, 'x', 'a'),
      cas(1, 20, 30, 'x', 'a', 'b', true),
      read(1, 40, 50, 'x', 'b'),
      write(2, 60, 70, 'x', 'c'),
      read(3, 80, 90, 'x', 'b'),
    ],
    4,
  );
  assert.match(explanation, /write x := "a"\n.*cas x "a" -> "b" swapped\n.*write x := "c"\n.*read x -> "b"/);
});

test('concurrent overlapping operations with many valid orders are accepted', () => {
  accepts([
    write(1, 0, 100, 'x', 'a'),
    write(2, 0, 100, 'x', 'b'),
    write(3, 0, 100, 'x', 'c'),
    read(4, 0, 100, 'x', 'b'),
    read(5, 10, 90, 'x', 'a'),
    read(6, 20, 80, 'x', null),
    read(7, 30, 70, 'x', 'c'),
    read(4, 110, 120, 'x', 'c'),
  ]);
  // Same, but the last read sees a value that is certainly overwritten: rejected.
  rejects(
    [
      write(1, 0, 100, 'x', 'a'),
      write(2, 0, 100, 'x', 'b'),
      read(4, 0, 100, 'x', 'b'),
      read(5, 10, 90, 'x', 'a'),
      read(4, 110, 120, 'x', 'b'),
      read(4, 130, 140, 'x', 'a'),
    ],
    4,
  );
});

test('timed-out operations may happen late or never', () => {
  // The timed-out write took effect after the acknowledged one.
  accepts([
    write(1, 0, 10, 'x', 'a', 'info'),
    write(2, 20, 30, 'x', 'b'),
    read(3, 40, 50, 'x', 'b'),
    read(3, 60, 70, 'x', 'a'),
  ]);
  // It never happened.
  accepts([write(1, 0, 10, 'x', 'a', 'info'), read(2, 20, 30, 'x', null), read(2, 40, 50, 'x', null)]);
  // But it cannot happen before it was invoked, nor twice.
  rejects([read(2, 0, 5, 'x', 'a'), write(1, 10, 20, 'x', 'a', 'info')], 2);
  rejects(
    [
      write(1, 0, 10, 'x', 'a', 'info'),
      read(2, 20, 30, 'x', 'a'),
      write(3, 40, 50, 'x', 'b'),
      read(2, 60, 70, 'x', 'a'),
    ],
    4,
  );
  // A timed-out CAS may have swapped; a failed one did not.
  accepts([write(1, 0, 10, 'x', 'a'), cas(2, 20, 30, 'x', 'a', 'b', 'info'), read(3, 40, 50, 'x', 'b')]);
  rejects([write(1, 0, 10, 'x', 'a'), cas(2, 20, 30, 'x', 'a', 'b', 'fail'), read(3, 40, 50, 'x', 'b')], 1);
});

test('keys are checked independently and every failing key is reported', () => {
  const report = checkLinearizable([
    write(1, 0, 10, 'x', 'a'),
    read(2, 20, 30, 'x', null),
    write(1, 0, 10, 'y', 'a'),
    read(2, 20, 30, 'y', 'a'),
    read(2, 20, 30, 'z', 'q'),
  ]);
  assert.equal(report.verdict, 'violation');
  assert.deepEqual(report.failures.map((f) => f.key), ['x', 'z']);
  assert.equal(report.keysChecked, 3);
});

test('the step budget answers unknown rather than hanging', () => {
  // Many concurrent timed-out writes, each read by a concurrent read, and a read of a value never
  // written: the search must try a great many orders before it can say "violation".
  const history = Array.from({ length: 30 }, (_, i) => write(i, 0, 1, 'x', `v${i}`, 'info'));
  for (let i = 0; i < 30; i++) history.push(read(100 + i, 2, 1000, 'x', `v${i}`));
  history.push(read(99, 2, 1000, 'x', 'never'));
  const report = checkLinearizable(history, { stepsMax: 1_000 });
  assert.equal(report.verdict, 'unknown');
  assert.deepEqual(report.unknownKeys, ['x']);
  assert.ok(report.steps <= 1_000);
});
