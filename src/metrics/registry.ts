// A small Prometheus registry (text exposition format 0.0.4): counters, gauges and histograms
// with fixed buckets, labelled by at most a couple of values. Hand-written because the needs are
// small and the hot paths (proposal, read, fsync timings) must not allocate per observation.

type Labels = Readonly<Record<string, string>>;
const noLabels: Labels = Object.freeze({});

interface Metric {
  render(): string;
}

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/["\\\n]/g, '_')}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

export class Counter implements Metric {
  private readonly values = new Map<string, number>();
  /** Label texts of label objects seen before (callers on hot paths pass the same objects). */
  private readonly texts = new WeakMap<Labels, string>();
  constructor(readonly name: string, readonly help: string) {}
  inc(labels: Labels = noLabels, by = 1): void {
    let key = this.texts.get(labels);
    if (key === undefined) {
      key = labelText(labels);
      this.texts.set(labels, key);
    }
    this.values.set(key, (this.values.get(key) ?? 0) + by);
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    if (this.values.size === 0) lines.push(`${this.name} 0`);
    for (const [labels, value] of this.values) lines.push(`${this.name}${labels} ${value}`);
    return lines.join('\n');
  }
}

export class Gauge implements Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly read: () => number,
    /** 'counter' for a total read from elsewhere (process_cpu_seconds_total). */
    private readonly type: 'gauge' | 'counter' = 'gauge',
  ) {}
  render(): string {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`, `${this.name} ${this.read()}`].join('\n');
  }
}

export class Histogram implements Metric {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  ) {
    this.counts = new Array<number>(bounds.length).fill(0);
  }
  observe(seconds: number): void {
    this.sum += seconds;
    this.count++;
    for (let i = 0; i < this.bounds.length; i++) {
      if (seconds <= (this.bounds[i] as number)) {
        this.counts[i] = (this.counts[i] as number) + 1;
        break;
      }
    }
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    let cumulative = 0;
    this.bounds.forEach((bound, i) => {
      cumulative += this.counts[i] as number;
      lines.push(`${this.name}_bucket{le="${bound}"} ${cumulative}`);
    });
    lines.push(`${this.name}_bucket{le="+Inf"} ${this.count}`);
    lines.push(`${this.name}_sum ${this.sum}`, `${this.name}_count ${this.count}`);
    return lines.join('\n');
  }
}

export class Registry {
  private readonly metrics: Metric[] = [];
  add<M extends Metric>(metric: M): M {
    this.metrics.push(metric);
    return metric;
  }
  render(): string {
    return this.metrics.map((metric) => metric.render()).join('\n') + '\n';
  }
}
