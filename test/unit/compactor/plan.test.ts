// The compactor's pure planning (src/compactor/plan.ts): etcd 3.4's periodic schedule for short
// and long retentions, a sample window that stays bounded however long it runs, and decisions
// that never go at or below the compact revision nor at or above the current revision.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  addSample, decideCompaction, periodicCandidate, periodicSchedule, revisionCandidate, type RevisionSample,
} from '../../../src/compactor/index.js';

test('periodic schedule: a tenth of the retention between samples, an hour at most between compactions', () => {
  assert.deepEqual(periodicSchedule(3_600_000), { sampleEveryMs: 360_000, compactEveryMs: 3_600_000 });
  assert.deepEqual(periodicSchedule(24 * 3_600_000), { sampleEveryMs: 360_000, compactEveryMs: 3_600_000 });
  assert.deepEqual(periodicSchedule(5_000), { sampleEveryMs: 500, compactEveryMs: 5_000 });
  // Rounded up, so ten samples span the retention.
  assert.deepEqual(periodicSchedule(1_005), { sampleEveryMs: 101, compactEveryMs: 1_005 });
});

test('the sample window keeps one sample a retention old and the ones after it, however long it runs', () => {
  let samples: RevisionSample[] = [];
  const retentionMs = 10_000;
  for (let atMs = 0; atMs <= 1_000_000; atMs += 1_000) {
    samples = addSample(samples, { atMs, revision: atMs / 10 }, retentionMs);
    assert.ok(samples.length <= 12, `${samples.length} samples at ${atMs}`);
  }
  assert.equal(periodicCandidate(samples, 1_000_000, retentionMs), 99_000);
  assert.equal(periodicCandidate(samples, 1_000_500, retentionMs), 99_000);
  assert.equal(periodicCandidate(samples, 1_001_000, retentionMs), 99_100);
  assert.equal(periodicCandidate([{ atMs: 5, revision: 3 }], 9_000, retentionMs), undefined);
  assert.throws(() => addSample(samples, { atMs: 5, revision: 1 }, retentionMs), /time order/);
});

test('revision candidate: `retention` behind, none while the cell is younger than that', () => {
  assert.equal(revisionCandidate(1500, 1000), 500);
  assert.equal(revisionCandidate(1000, 1000), undefined);
  assert.equal(revisionCandidate(3, 1000), undefined);
});

test('a decision stays above the compact revision and below the current revision', () => {
  assert.deepEqual(decideCompaction(undefined, { revision: 10, compactRevision: 0 }), { type: 'wait' });
  assert.deepEqual(decideCompaction(5, { revision: 10, compactRevision: 0 }), { type: 'propose', revision: 5 });
  assert.deepEqual(decideCompaction(5, { revision: 10, compactRevision: 5 }), { type: 'covered' });
  assert.deepEqual(decideCompaction(5, { revision: 10, compactRevision: 7 }), { type: 'covered' });
  // A candidate at the current revision (no writes since it was seen) keeps that revision readable.
  assert.deepEqual(decideCompaction(10, { revision: 10, compactRevision: 0 }), { type: 'propose', revision: 9 });
  assert.deepEqual(decideCompaction(10, { revision: 10, compactRevision: 9 }), { type: 'covered' });
  assert.deepEqual(decideCompaction(1, { revision: 1, compactRevision: 0 }), { type: 'covered' });
});
