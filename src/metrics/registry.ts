// Metrics over prom-client (its registry, the exposition format, the default process and Node
// metrics). The instruments here keep their numbers in plain fields of pre-bound children and
// hand them to prom-client only at scrape time: a proposal, a read, an fsync or a request costs an
// addition and a bucket search, never a label-map lookup (prom-client's own children hash their
// labels on every call).
import client from 'prom-client';

export type Labels = Readonly<Record<string, string>>;
const noLabels: Labels = Object.freeze({});

/** What prom-client's registry reads from a metric at scrape time. */
interface Collected {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly values: { value: number; labels: Labels; metricName?: string }[];
  readonly aggregator: 'sum';
}

interface Metric {
  readonly name: string;
  get(): Collected;
}

/** One labelled counter value; `inc` is a plain addition. */
export class CounterChild {
  value = 0;
  constructor(readonly labels: Labels) {}
  inc(by = 1): void {
    this.value += by;
  }
}

export class Counter implements Metric {
  readonly type = 'counter';
  private readonly children: CounterChild[] = [];
  /** Children of label objects seen before (callers on hot paths pass the same objects). */
  private readonly byObject = new WeakMap<Labels, CounterChild>();
  private readonly byText = new Map<string, CounterChild>();
  constructor(readonly name: string, readonly help: string) {}
  /** The child of these label values: bind it once and call its inc() on the hot path. */
  child(labels: Labels = noLabels): CounterChild {
    let child = this.byObject.get(labels);
    if (child !== undefined) return child;
    const text = JSON.stringify(Object.entries(labels).sort());
    child = this.byText.get(text);
    if (child === undefined) {
      child = new CounterChild(Object.freeze({ ...labels }));
      this.byText.set(text, child);
      this.children.push(child);
    }
    this.byObject.set(labels, child);
    return child;
  }
  inc(labels: Labels = noLabels, by = 1): void {
    this.child(labels).inc(by);
  }
  get(): Collected {
    const values = this.children.length === 0 ? [{ value: 0, labels: noLabels }]
      : this.children.map((child) => ({ value: child.value, labels: child.labels }));
    return { name: this.name, help: this.help, type: 'counter', values, aggregator: 'sum' };
  }
}

/** A value read at scrape time (a gauge, or a total kept elsewhere: type 'counter'). */
export class Gauge implements Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly read: () => number,
    private readonly type: 'gauge' | 'counter' = 'gauge',
  ) {}
  get(): Collected {
    return { name: this.name, help: this.help, type: this.type, values: [{ value: this.read(), labels: noLabels }], aggregator: 'sum' };
  }
}

/** Labelled values read at scrape time (one per peer, per reason, ...). */
export class LabelledGauge implements Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly read: () => Iterable<readonly [Labels, number]>,
    private readonly type: 'gauge' | 'counter' = 'gauge',
  ) {}
  get(): Collected {
    const values = [...this.read()].map(([labels, value]) => ({ value, labels }));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: 'sum' };
  }
}

export const defaultSecondsBuckets: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** One labelled histogram's buckets; `observe` is a bucket search and three additions. */
export class HistogramChild {
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(readonly labels: Labels, private readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length).fill(0);
  }
  observe(value: number): void {
    this.sum += value;
    this.count++;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        this.counts[i] = (this.counts[i] as number) + 1;
        return;
      }
    }
  }
}

export class Histogram implements Metric {
  private readonly children: HistogramChild[] = [];
  private readonly byText = new Map<string, HistogramChild>();
  private unlabelled: HistogramChild | null = null;
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[] = defaultSecondsBuckets,
    /** False: a labelled histogram that shows nothing until a child exists. */
    private readonly showUnlabelled = true,
  ) {}
  child(labels: Labels = noLabels): HistogramChild {
    const text = JSON.stringify(Object.entries(labels).sort());
    let child = this.byText.get(text);
    if (child === undefined) {
      child = new HistogramChild(Object.freeze({ ...labels }), this.bounds);
      this.byText.set(text, child);
      this.children.push(child);
    }
    return child;
  }
  observe(seconds: number): void {
    (this.unlabelled ??= this.child()).observe(seconds);
  }
  get(): Collected {
    if (this.showUnlabelled) this.unlabelled ??= this.child();
    const values: Collected['values'] = [];
    for (const child of this.children) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += child.counts[i] as number;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...child.labels, le: String(bound) }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { ...child.labels, le: '+Inf' }, value: child.count });
      values.push({ metricName: `${this.name}_sum`, labels: child.labels, value: child.sum });
      values.push({ metricName: `${this.name}_count`, labels: child.labels, value: child.count });
    }
    return { name: this.name, help: this.help, type: 'histogram', values, aggregator: 'sum' };
  }
}

/** A node's (or the canary's) metrics: one prom-client registry, nothing global. */
export class Registry {
  readonly prom = new client.Registry();
  readonly contentType = client.Registry.PROMETHEUS_CONTENT_TYPE;
  add<M extends Metric>(metric: M): M {
    // prom-client's registry reads name, help, type and get(); these classes supply them.
    this.prom.registerMetric(metric as unknown as client.Metric);
    return metric;
  }
  /** The process and Node.js metrics every Node service exports (prom-client's default set). */
  addDefaultMetrics(): void {
    client.collectDefaultMetrics({ register: this.prom });
  }
  render(): Promise<string> {
    return this.prom.metrics();
  }
}
