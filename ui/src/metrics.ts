// A small reader of the Prometheus text format (GET /metrics): samples by name, with labels.

export interface Sample {
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export type Samples = ReadonlyMap<string, readonly Sample[]>;

export function parseMetrics(text: string): Samples {
  const samples = new Map<string, Sample[]>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (match === null) continue;
    const labels: Record<string, string> = {};
    for (const label of (match[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[label[1] as string] = label[2] as string;
    const list = samples.get(match[1] as string) ?? [];
    list.push({ labels, value: Number(match[4]) });
    samples.set(match[1] as string, list);
  }
  return samples;
}

/** The sum of a metric's samples (0 when absent). */
export function total(samples: Samples, name: string, where: (labels: Readonly<Record<string, string>>) => boolean = () => true): number {
  return (samples.get(name) ?? []).filter((sample) => where(sample.labels)).reduce((sum, sample) => sum + sample.value, 0);
}
