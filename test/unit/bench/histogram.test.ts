// The bench's latency histogram: buckets tile the value range without gaps or overlaps, every value
// lands in a bucket no wider than 1/128 of it, and percentiles match exact order statistics within
// that bound (never below them). Also the medians and ratios the bench tables print.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  LatencyHistogram, bucketBounds, bucketIndex, histogramValueMax,
} from '../../../src/bench/histogram.js';
import { median } from '../../../src/bench/report.js';

test('buckets are contiguous, increasing, and hold their values', () => {
  let previousHigh = -1;
  for (let index = 0; index <= bucketIndex(histogramValueMax); index++) {
    const { low, high } = bucketBounds(index);
    assert.equal(low, previousHigh + 1, `bucket ${index} starts right after the previous one`);
    assert.ok(high >= low);
    assert.equal(bucketIndex(low), index);
    assert.equal(bucketIndex(high), index);
    if (low >= 256) {
      assert.ok((high - low + 1) / low <= 1 / 128, `bucket ${index} is at most 1/128 wide`);
    }
    previousHigh = high;
  }
  assert.equal(previousHigh, histogramValueMax);
});

test('small values are exact; out-of-range values are clamped', () => {
  for (let v = 0; v < 256; v++) assert.deepEqual(bucketBounds(bucketIndex(v)), { low: v, high: v });
  assert.equal(bucketIndex(-5), 0);
  assert.equal(bucketIndex(Number.NaN), 0);
  assert.equal(bucketIndex(2 ** 40), bucketIndex(histogramValueMax));
  assert.throws(() => bucketBounds(-1), RangeError);
});

test('percentiles match exact order statistics within the bucket error, never below', () => {
  const histogram = new LatencyHistogram();
  const values: number[] = [];
  let x = 12345;
  for (let i = 0; i < 100_000; i++) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    // Log-uniform over 10 µs .. 10 s, like request latencies with a long tail.
    const v = Math.round(10 * 10 ** (6 * (x / 2 ** 31)));
    values.push(v);
    histogram.record(v);
  }
  values.sort((a, b) => a - b);
  for (const p of [1, 50, 90, 99, 99.9, 99.99, 100]) {
    const exact = values[Math.ceil((p / 100) * values.length) - 1] as number;
    const estimate = histogram.percentile(p);
    assert.ok(estimate >= exact, `p${p}: ${estimate} >= ${exact}`);
    assert.ok(estimate <= exact * (1 + 1 / 128), `p${p}: ${estimate} within 1/128 of ${exact}`);
  }
  assert.equal(histogram.percentile(100), values[values.length - 1]);
  const summary = histogram.summary();
  assert.equal(summary.count, values.length);
  assert.equal(summary.minUs, values[0]);
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  assert.ok(Math.abs(summary.meanUs - mean) < 1e-6 * mean);
});

test('a uniform 1..10000 µs run gives the textbook percentiles', () => {
  const histogram = new LatencyHistogram();
  for (let v = 1; v <= 10_000; v++) histogram.record(v);
  assert.ok(Math.abs(histogram.percentile(50) - 5000) <= 5000 / 128);
  assert.ok(Math.abs(histogram.percentile(99) - 9900) <= 9900 / 128);
  assert.ok(Math.abs(histogram.percentile(99.9) - 9990) <= 9990 / 128);
  assert.equal(histogram.percentile(100), 10_000);
});

test('merging equals recording everything in one histogram; empty is all zeros', () => {
  const a = new LatencyHistogram();
  const b = new LatencyHistogram();
  const all = new LatencyHistogram();
  for (let i = 1; i <= 5000; i++) {
    const v = (i * 7919) % 100_003;
    (i % 3 === 0 ? a : b).record(v);
    all.record(v);
  }
  a.merge(b);
  assert.deepEqual(a.summary(), all.summary());
  const empty = new LatencyHistogram();
  assert.deepEqual(empty.summary(), {
    count: 0, minUs: 0, meanUs: 0, p50Us: 0, p90Us: 0, p99Us: 0, p999Us: 0, maxUs: 0,
  });
  assert.throws(() => empty.percentile(0), RangeError);
  assert.throws(() => empty.percentile(101), RangeError);
});

test('median of runs: odd, even, empty', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.ok(Number.isNaN(median([])));
});
