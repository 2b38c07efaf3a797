// The lock bench's own arithmetic: a hand-off is timed from the release being sent to the next
// grant arriving, a grant while someone still holds the lock is flagged (never timed), and the
// same-run ratio is the median of per-round ratios, not the ratio of the medians.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HandoffRecorder, sameRunRatio } from '../../../src/bench/lock-stats.js';

test('hand-offs are timed from release sent to the next grant, per hand-off', () => {
  const recorder = new HandoffRecorder();
  assert.equal(recorder.granted(100, 'a'), null, 'the first grant follows no release');
  recorder.releaseSent(110);
  assert.equal(recorder.granted(125, 'b'), 15);
  recorder.releaseSent(200);
  assert.equal(recorder.granted(203.5, 'c'), 3.5);
  assert.deepEqual(recorder.take(), [15, 3.5]);
  assert.deepEqual(recorder.take(), [], 'take empties the list');
  recorder.releaseSent(300);
  assert.equal(recorder.granted(340, 'a'), 40);
  assert.deepEqual(recorder.take(), [40]);
  assert.deepEqual(recorder.violations, []);
});

test('a grant while the lock is still held is a violation, not a latency', () => {
  const recorder = new HandoffRecorder();
  recorder.granted(0, 'a');
  assert.equal(recorder.granted(5, 'b'), null);
  assert.equal(recorder.violations.length, 1);
  assert.match(recorder.violations[0] ?? '', /b was granted the lock at 5\.0 ms while another client still held it/);
  assert.deepEqual(recorder.take(), []);
});

test('a release with no holder is refused', () => {
  const recorder = new HandoffRecorder();
  assert.throws(() => recorder.releaseSent(1), /nobody held the lock/);
  recorder.granted(2, 'a');
  recorder.releaseSent(3);
  assert.throws(() => recorder.releaseSent(4), /nobody held the lock/);
});

test('same-run ratio: median of per-round ratios, medians of each system', () => {
  const result = sameRunRatio([
    { baton: 10, etcd: 5 }, // 2
    { baton: 40, etcd: 10 }, // 4 (a noisy round for both)
    { baton: 6, etcd: 6 }, // 1
  ]);
  assert.equal(result.baton, 10);
  assert.equal(result.etcd, 6);
  assert.deepEqual(result.ratios, [2, 4, 1]);
  assert.equal(result.ratio, 2, 'not 10 / 6: each ratio compares runs that shared the load');
});

test('same-run ratio skips rounds where a system has no figure', () => {
  const result = sameRunRatio([{ baton: 3, etcd: Number.NaN }, { baton: 8, etcd: 4 }]);
  assert.deepEqual(result.ratios, [2]);
  assert.equal(result.ratio, 2);
  assert.ok(Number.isNaN(sameRunRatio([]).ratio));
});
