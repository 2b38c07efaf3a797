// Automatic compaction (etcd's --auto-compaction-*): on a fixed tick, every member samples its
// applied revision, and the leader alone proposes a compact command through the one write path,
// so the compaction point is replicated like any write and followers never race the leader.
// Followers keep sampling so that a new leader already holds a window of revisions (etcd's paused
// compactor does the same). One proposal at most is in flight: ticks that find one pending only
// sample, and a failed proposal is asked again at a later tick, never queued behind the first.
import { CompactedError } from '../base/errors.js';
import type { Timers } from '../base/timers.js';
import {
  addSample,
  decideCompaction,
  periodicCandidate,
  periodicSchedule,
  revisionCandidate,
  type CompactionDecision,
  type RevisionSample,
} from './plan.js';
import type { AutoCompactionPolicy, CompactorCell, CompactorLogger } from './types.js';

/** etcd 3.4's revision-mode interval (v3compactor revInterval). */
export const revisionCheckMsDefault = 5 * 60_000;

export interface AutoCompactorOptions {
  readonly policy: Exclude<AutoCompactionPolicy, { mode: 'off' }>;
  /** Revision mode: how often the leader checks (etcd: 5 minutes); periodic derives its own. */
  readonly revisionCheckMs: number;
  readonly timers: Pick<Timers, 'setTimeout' | 'monotonicMs'>;
  readonly log: CompactorLogger;
}

export class AutoCompactor {
  private readonly tickMs: number;
  /** Periodic mode: the least time between two compactions (etcd's compactInterval). */
  private readonly compactEveryMs: number;
  /** Periodic mode. Invariant: in time order, and at most one sample older than the retention. */
  private samples: RevisionSample[] = [];
  /** When the last compaction succeeded, or the compactor started. */
  private lastDoneMs = 0;
  private timer: { cancel(): void } | null = null;
  private inFlight = false;
  private stopped = false;

  constructor(
    private readonly cell: CompactorCell,
    private readonly options: AutoCompactorOptions,
  ) {
    const { policy } = options;
    if (policy.mode === 'periodic') {
      const schedule = periodicSchedule(policy.retentionMs);
      this.tickMs = schedule.sampleEveryMs;
      this.compactEveryMs = schedule.compactEveryMs;
    } else {
      this.tickMs = options.revisionCheckMs;
      this.compactEveryMs = 0;
    }
  }

  /** What the log line at start says. */
  describe(): string {
    const { policy } = this.options;
    const every = `${this.tickMs / 1000} s`;
    return policy.mode === 'periodic'
      ? `periodic, keeping ${policy.retentionMs / 1000} s of history (sampled every ${every})`
      : `revision, keeping ${policy.retentionRevisions} revisions (checked every ${every})`;
  }

  start(): void {
    this.lastDoneMs = this.options.timers.monotonicMs();
    this.sample(this.lastDoneMs);
    this.schedule();
  }

  /** Stops the ticks; a proposal in flight still settles but changes nothing here. */
  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = null;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.options.timers.setTimeout(() => this.tick(), this.tickMs);
  }

  private tick(): void {
    const nowMs = this.options.timers.monotonicMs();
    this.sample(nowMs);
    if (!this.inFlight && this.cell.isLeader() && nowMs - this.lastDoneMs >= this.compactEveryMs) {
      this.act(nowMs, this.decide(nowMs));
    }
    this.schedule();
  }

  private sample(nowMs: number): void {
    const { policy } = this.options;
    if (policy.mode !== 'periodic') return;
    const sample = { atMs: nowMs, revision: this.cell.revision() };
    this.samples = addSample(this.samples, sample, policy.retentionMs);
  }

  private decide(nowMs: number): CompactionDecision {
    const { policy } = this.options;
    const candidate = policy.mode === 'periodic'
      ? periodicCandidate(this.samples, nowMs, policy.retentionMs)
      : revisionCandidate(this.cell.revision(), policy.retentionRevisions);
    const store = { revision: this.cell.revision(), compactRevision: this.cell.compactRevision() };
    return decideCompaction(candidate, store);
  }

  private act(nowMs: number, decision: CompactionDecision): void {
    if (decision.type === 'wait') return;
    if (decision.type === 'covered') {
      this.lastDoneMs = nowMs;
      return;
    }
    const { revision } = decision;
    this.inFlight = true;
    const { mode } = this.options.policy;
    this.options.log.info(`auto compaction: compacting to revision ${revision} (${mode} mode)`);
    // Through a promise even if compact threw at once: in flight always ends.
    Promise.resolve().then(() => this.cell.compact(revision)).then(
      () => this.settled(revision, null),
      (error: unknown) => this.settled(revision, error),
    );
  }

  private settled(revision: number, error: unknown): void {
    this.inFlight = false;
    if (this.stopped) return;
    if (error === null || error instanceof CompactedError) {
      // A compaction that found the point already past it did what was asked (etcd: ErrCompacted).
      this.lastDoneMs = this.options.timers.monotonicMs();
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    this.options.log.warn(
      `auto compaction to revision ${revision} failed (asked again in ${this.tickMs} ms): ${message}`,
    );
  }
}
