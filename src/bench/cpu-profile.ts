// Summarizes a V8 .cpuprofile (from `node --cpu-prof`): self time per function, the way DevTools'
// bottom-up view shows it, with (idle), (garbage collector) and (program) kept as their own rows.

interface ProfileNode {
  readonly id: number;
  readonly callFrame: {
    functionName: string;
    url: string;
    lineNumber: number;
    columnNumber: number;
  };
  readonly hitCount?: number;
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples?: readonly number[];
  readonly timeDeltas?: readonly number[];
}

export interface SelfTimeRow {
  readonly name: string;
  /** file:line, relative to the repository where possible, or '(native)'. */
  readonly location: string;
  readonly selfMs: number;
  /** Percent of all samples, idle included. */
  readonly percent: number;
  /** Percent of non-idle samples (the share of the CPU this process actually used). */
  readonly busyPercent: number;
}

export interface ProfileSummary {
  readonly durationMs: number;
  readonly idlePercent: number;
  readonly rows: readonly SelfTimeRow[];
}

export function summarizeCpuProfile(profile: CpuProfile, rootDir = '', top = 25): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // Each sample's time is the delta to the next sample (the last one gets none, as in DevTools).
  for (let i = 0; i < samples.length; i++) {
    const id = samples[i] as number;
    const delta = deltas[i + 1] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, delta));
  }
  const byFunction = new Map<string, { name: string; location: string; us: number }>();
  let totalUs = 0;
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (node === undefined) continue;
    const frame = node.callFrame;
    const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
    const location =
      frame.url === '' ? '(native)' : `${shortUrl(frame.url, rootDir)}:${frame.lineNumber + 1}`;
    const id2 = `${name}@${location}`;
    const row = byFunction.get(id2) ?? { name, location, us: 0 };
    row.us += us;
    byFunction.set(id2, row);
    totalUs += us;
    if (name === '(idle)') idleUs += us;
  }
  const busyUs = Math.max(1, totalUs - idleUs);
  const rows = [...byFunction.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, top)
    .map((r) => ({
      name: r.name,
      location: r.location,
      selfMs: r.us / 1000,
      percent: (100 * r.us) / Math.max(1, totalUs),
      busyPercent: r.name === '(idle)' ? 0 : (100 * r.us) / busyUs,
    }));
  return { durationMs: totalUs / 1000, idlePercent: (100 * idleUs) / Math.max(1, totalUs), rows };
}

function shortUrl(url: string, rootDir: string): string {
  const path = url.startsWith('file://') ? decodeURIComponent(url.slice('file://'.length)) : url;
  if (rootDir !== '' && path.startsWith(rootDir)) {
    return path.slice(rootDir.length).replace(/^\//, '');
  }
  return path.replace(/^.*\/node_modules\//, 'node_modules/');
}
