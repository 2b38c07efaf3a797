// A latency histogram in the HDR style: log-linear buckets, so every recorded value lands in a
// bucket whose width is at most 1/128 of the value (under 0.8% error) while the whole range, from
// 1 µs to over an hour, fits in about 3,300 counters. Values are whole microseconds.
//
// Layout (S = 2^subBucketBits = 128): values below 2S are counted exactly, one bucket each. Above,
// a value v with highest set bit m keeps its top (subBucketBits + 1) bits:
// shift = m - subBucketBits, top = v >> shift in [S, 2S), index = shift * S + top.
// Indexes are contiguous and increase with v.

const subBucketBits = 7;
const subBucketCount = 1 << subBucketBits;
/** Values are clamped here: 2^32 - 1 µs is about 71 minutes, far past any request timeout. */
export const histogramValueMax = 2 ** 32 - 1;
const bucketCount = (32 - subBucketBits) * subBucketCount + subBucketCount;

/** The bucket a value (µs, clamped to [0, histogramValueMax]) is counted in. */
export function bucketIndex(value: number): number {
  const v = clampValue(value);
  if (v < 2 * subBucketCount) return v;
  const highestBit = 31 - Math.clz32(v);
  const shift = highestBit - subBucketBits;
  return shift * subBucketCount + (v >>> shift);
}

/** The smallest and largest values counted in bucket `index`. */
export function bucketBounds(index: number): { low: number; high: number } {
  if (!Number.isInteger(index) || index < 0 || index >= bucketCount) {
    throw new RangeError(`bucket index ${index} out of range`);
  }
  if (index < 2 * subBucketCount) return { low: index, high: index };
  const shift = Math.floor(index / subBucketCount) - 1;
  const top = index - shift * subBucketCount;
  const low = top * 2 ** shift;
  return { low, high: low + 2 ** shift - 1 };
}

function clampValue(value: number): number {
  if (!(value > 0)) return 0;
  return Math.min(Math.round(value), histogramValueMax);
}

export interface HistogramSummary {
  readonly count: number;
  readonly minUs: number;
  readonly meanUs: number;
  readonly p50Us: number;
  readonly p90Us: number;
  readonly p99Us: number;
  readonly p999Us: number;
  readonly maxUs: number;
}

export class LatencyHistogram {
  private readonly counts = new Float64Array(bucketCount);
  // Invariant: totalCount equals the sum of counts; minUs <= maxUs once totalCount > 0.
  private totalCount = 0;
  private sumUs = 0;
  private minUs = Number.POSITIVE_INFINITY;
  private maxUs = 0;

  get count(): number {
    return this.totalCount;
  }

  record(valueUs: number): void {
    const v = clampValue(valueUs);
    const index = bucketIndex(v);
    this.counts[index] = (this.counts[index] ?? 0) + 1;
    this.totalCount += 1;
    this.sumUs += v;
    if (v < this.minUs) this.minUs = v;
    if (v > this.maxUs) this.maxUs = v;
  }

  merge(other: LatencyHistogram): void {
    for (let i = 0; i < bucketCount; i++) {
      const c = other.counts[i] ?? 0;
      if (c > 0) this.counts[i] = (this.counts[i] ?? 0) + c;
    }
    this.totalCount += other.totalCount;
    this.sumUs += other.sumUs;
    this.minUs = Math.min(this.minUs, other.minUs);
    this.maxUs = Math.max(this.maxUs, other.maxUs);
  }

  /**
   * The value at percentile p (0 < p <= 100): the smallest recorded value such that at least p% of
   * values are at or below it, reported as the top of its bucket (as HDR does: never understated)
   * but never above the largest value recorded. 0 when nothing was recorded.
   */
  percentile(p: number): number {
    if (!(p > 0 && p <= 100)) throw new RangeError(`percentile ${p} is not in (0, 100]`);
    if (this.totalCount === 0) return 0;
    const rank = Math.max(1, Math.ceil((p / 100) * this.totalCount));
    let seen = 0;
    for (let i = 0; i < bucketCount; i++) {
      seen += this.counts[i] ?? 0;
      if (seen >= rank) return Math.max(this.minUs, Math.min(bucketBounds(i).high, this.maxUs));
    }
    return this.maxUs;
  }

  summary(): HistogramSummary {
    const empty = this.totalCount === 0;
    return {
      count: this.totalCount,
      minUs: empty ? 0 : this.minUs,
      meanUs: empty ? 0 : this.sumUs / this.totalCount,
      p50Us: this.percentile(50),
      p90Us: this.percentile(90),
      p99Us: this.percentile(99),
      p999Us: this.percentile(99.9),
      maxUs: this.maxUs,
    };
  }
}
