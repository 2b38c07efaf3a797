// Closed loops with a per-second timeline and named phases, for the scale bench. A loop has
// lanes (e.g. "bulk": 16 workers sending 128-put transactions, and "probe": 8 workers sending
// single puts beside them); each worker runs one step at a time until its lane's source runs dry
// or the loop is stopped, and the loop ends once every lane that `drives` it has run dry.
// Every second records, per lane, the steps and items that completed in it and their longest
// latency, and across lanes the longest time in which *no* step completed (a pause: with many
// requests outstanding a healthy server answers something every few milliseconds). Phases
// ("before", "during the backup") keep their own histograms, so a figure is compared with the
// same load's figure just before it.
import { LatencyHistogram, type HistogramSummary } from './histogram.js';

/** One step: resolves with the items it carried (puts in a txn), or null when nothing is left. */
export type Step = (worker: number) => Promise<number | null>;

export interface Lane {
  readonly name: string;
  readonly workers: number;
  readonly step: Step;
  /** The loop ends when every driving lane has run dry (the others are then stopped). */
  readonly drives: boolean;
  /** Waits for the worker's next slot (a paced lane); latency is timed from after it. */
  readonly pace?: () => Promise<void>;
}

export interface LaneSecond {
  readonly steps: number;
  readonly items: number;
  readonly maxLatencyMs: number;
}

export interface TimelineSecond {
  readonly second: number;
  readonly phase: string;
  readonly lanes: Readonly<Record<string, LaneSecond>>;
  /** The longest interval ending in this second in which no step of any lane completed. */
  readonly longestGapMs: number;
}

export interface PhaseFigures {
  readonly phase: string;
  readonly lane: string;
  readonly seconds: number;
  readonly steps: number;
  readonly items: number;
  readonly itemsPerSecond: number;
  readonly latency: HistogramSummary;
  readonly errors: number;
}

export interface LoopResult {
  readonly seconds: number;
  /** Items and steps of each lane over the whole run. */
  readonly totals: Readonly<Record<string, { steps: number; items: number }>>;
  readonly errors: Readonly<Record<string, number>>;
  readonly phases: readonly PhaseFigures[];
  readonly timeline: readonly TimelineSecond[];
  /** CPU this process used while the loop ran, in cores. */
  readonly clientCpuCores: number;
}

interface Bucket { phase: string; lanes: Record<string, { steps: number; items: number; maxLatencyMs: number }>; longestGapMs: number }
interface LanePhase { steps: number; items: number; errors: number; histogram: LatencyHistogram }
interface Phase { name: string; startMs: number; endMs: number; lanes: Map<string, LanePhase> }

export class ClosedLoop {
  private stopping = false;
  private readonly buckets: Bucket[] = [];
  private readonly phases: Phase[] = [];
  private readonly errors: Record<string, number> = {};
  private readonly totals: Record<string, { steps: number; items: number }> = {};
  private startMs = 0;
  /** Null until the first completion: the wait for the very first answer is no pause. */
  private lastCompletionMs: number | null = null;

  constructor(private readonly lanes: readonly Lane[], firstPhase = 'load') {
    if (lanes.length === 0 || !lanes.every((l) => Number.isInteger(l.workers) && l.workers >= 1)) {
      throw new RangeError('at least one lane, each with workers >= 1');
    }
    for (const lane of lanes) this.totals[lane.name] = { steps: 0, items: 0 };
    this.phases.push(this.newPhase(firstPhase, 0));
  }

  /** Runs until every driving lane found its source exhausted (or until stop()). */
  async run(): Promise<LoopResult> {
    this.startMs = performance.now();
    (this.phases[0] as Phase).startMs = this.startMs;
    const cpuStart = process.cpuUsage();
    const workers = (lane: Lane): Promise<void>[] =>
      Array.from({ length: lane.workers }, (_, w) => this.worker(lane, w));
    const driving = this.lanes.filter((l) => l.drives).flatMap(workers);
    const others = this.lanes.filter((l) => !l.drives).flatMap(workers);
    if (driving.length > 0) {
      await Promise.all(driving);
      this.stop();
    }
    await Promise.all(others);
    const endMs = performance.now();
    const cpu = process.cpuUsage(cpuStart);
    this.currentPhase().endMs = endMs;
    const seconds = (endMs - this.startMs) / 1000;
    return {
      seconds,
      totals: this.totals,
      errors: this.errors,
      phases: this.phases.flatMap((p) => [...p.lanes].map(([lane, figures]) => phaseFigures(p, lane, figures))),
      timeline: this.buckets.map((b, second) => ({ second, ...b })),
      clientCpuCores: (cpu.user + cpu.system) / 1e6 / Math.max(seconds, 1e-3),
    };
  }

  /** Steps completing from now on count toward a new phase. */
  mark(phase: string): void {
    const now = performance.now();
    this.currentPhase().endMs = now;
    this.phases.push(this.newPhase(phase, now));
  }

  stop(): void {
    this.stopping = true;
  }

  /** A failure a step survived (it retries or skips): counted by reason. */
  countError(lane: string, reason: string): void {
    const key = `${lane}: ${reason}`;
    this.errors[key] = (this.errors[key] ?? 0) + 1;
    const phase = this.currentPhase().lanes.get(lane);
    if (phase !== undefined) phase.errors += 1;
  }

  private async worker(lane: Lane, w: number): Promise<void> {
    while (!this.stopping) {
      if (lane.pace !== undefined) await lane.pace();
      if (this.stopping) return;
      const sentMs = performance.now();
      const items = await lane.step(w);
      if (items === null) return;
      this.record(lane.name, sentMs, performance.now(), items);
    }
  }

  private record(lane: string, sentMs: number, doneMs: number, items: number): void {
    const latencyMs = doneMs - sentMs;
    const bucket = this.bucketAt(doneMs);
    const second = bucket.lanes[lane] as { steps: number; items: number; maxLatencyMs: number };
    second.steps += 1;
    second.items += items;
    second.maxLatencyMs = Math.max(second.maxLatencyMs, latencyMs);
    if (this.lastCompletionMs !== null) bucket.longestGapMs = Math.max(bucket.longestGapMs, doneMs - this.lastCompletionMs);
    this.lastCompletionMs = doneMs;
    const phase = this.currentPhase().lanes.get(lane) as LanePhase;
    phase.steps += 1;
    phase.items += items;
    phase.histogram.record(latencyMs * 1000);
    const total = this.totals[lane] as { steps: number; items: number };
    total.steps += 1;
    total.items += items;
  }

  private bucketAt(ms: number): Bucket {
    const second = Math.max(0, Math.floor((ms - this.startMs) / 1000));
    while (this.buckets.length <= second) {
      const lanes = Object.fromEntries(this.lanes.map((l) => [l.name, { steps: 0, items: 0, maxLatencyMs: 0 }]));
      this.buckets.push({ phase: this.currentPhase().name, lanes, longestGapMs: 0 });
    }
    return this.buckets[second] as Bucket;
  }

  private currentPhase(): Phase {
    return this.phases[this.phases.length - 1] as Phase;
  }

  private newPhase(name: string, startMs: number): Phase {
    const lanes = new Map(this.lanes.map((l) => [l.name, { steps: 0, items: 0, errors: 0, histogram: new LatencyHistogram() }]));
    return { name, startMs, endMs: startMs, lanes };
  }
}

function phaseFigures(phase: Phase, lane: string, figures: LanePhase): PhaseFigures {
  const seconds = (phase.endMs - phase.startMs) / 1000;
  return {
    phase: phase.name,
    lane,
    seconds,
    steps: figures.steps,
    items: figures.items,
    itemsPerSecond: seconds > 0 ? figures.items / seconds : 0,
    latency: figures.histogram.summary(),
    errors: figures.errors,
  };
}

/**
 * Slots `intervalMs` apart for a lane's workers together (an offered rate). A lane that falls
 * behind sends at once but never bursts to catch up: slots missed are dropped.
 */
export function pacer(intervalMs: number): () => Promise<void> {
  if (!(intervalMs > 0)) throw new RangeError('interval > 0');
  let next = performance.now();
  return async () => {
    const now = performance.now();
    const slot = Math.max(next, now);
    next = slot + intervalMs;
    if (slot > now) await new Promise((resolve) => setTimeout(resolve, slot - now));
  };
}

/** Retries `attempt` on the failures `retryable` accepts, with a short pause; counts each one. */
export async function withRetries<T>(
  attempt: () => Promise<T>,
  options: { retryable(error: Error): string | null; onRetry(reason: string): void; attemptsMax?: number },
): Promise<T> {
  const attemptsMax = options.attemptsMax ?? 50;
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      const reason = options.retryable(error as Error);
      if (reason === null || n >= attemptsMax) throw error;
      options.onRetry(reason);
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 20 * n)));
    }
  }
}
