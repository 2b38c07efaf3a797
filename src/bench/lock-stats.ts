// Pure helpers of the lock bench (`npm run bench:locks`): hand-off latencies taken from the order in
// which releases are sent and grants arrive (refusing a grant that arrives while the lock is still
// held: two holders at once would be a server bug, not a figure), and same-run Baton ÷ etcd ratios.
import { median } from './report.js';

/**
 * Follows one lock through its grants and releases, as the client sees them. A hand-off is the
 * time from a release request being sent to the next grant answer arriving.
 */
export class HandoffRecorder {
  private held = false;
  private releaseSentAtMs: number | null = null;
  private latencies: number[] = [];
  /** Grants that arrived while the previous holder had not sent its release (a safety bug). */
  readonly violations: string[] = [];

  get isHeld(): boolean {
    return this.held;
  }

  /** A grant answer arrived; returns the hand-off latency, or null for the very first grant. */
  granted(atMs: number, who: string): number | null {
    if (this.held) {
      this.violations.push(`${who} was granted the lock at ${atMs.toFixed(1)} ms while another client still held it`);
      return null;
    }
    this.held = true;
    const sent = this.releaseSentAtMs;
    if (sent === null) return null;
    this.releaseSentAtMs = null;
    const latency = Math.max(0, atMs - sent);
    this.latencies.push(latency);
    return latency;
  }

  /** The holder sent its release. */
  releaseSent(atMs: number): void {
    if (!this.held) throw new Error('a release was sent while nobody held the lock');
    this.held = false;
    this.releaseSentAtMs = atMs;
  }

  /** The hand-off latencies (ms) recorded since the last take, in order. */
  take(): number[] {
    const taken = this.latencies;
    this.latencies = [];
    return taken;
  }
}

/** One figure (a p50, a throughput) measured for both systems in the same round. */
export interface PairedFigure {
  readonly baton: number;
  readonly etcd: number;
}

export interface SameRunRatio {
  readonly baton: number;
  readonly etcd: number;
  /** The median over rounds of Baton ÷ etcd within each round (not the ratio of the medians). */
  readonly ratio: number;
  readonly ratios: readonly number[];
}

/**
 * Medians of both systems and the median of the per-round ratios: each round measures both back to
 * back, so a ratio compares runs that shared the machine's load, whatever it was at the time.
 */
export function sameRunRatio(rounds: readonly PairedFigure[]): SameRunRatio {
  const ratios = rounds
    .filter((r) => Number.isFinite(r.baton) && Number.isFinite(r.etcd) && r.etcd > 0)
    .map((r) => r.baton / r.etcd);
  return {
    baton: median(rounds.map((r) => r.baton)),
    etcd: median(rounds.map((r) => r.etcd)),
    ratio: median(ratios),
    ratios,
  };
}
