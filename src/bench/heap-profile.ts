// Summarizes a V8 sampling heap profile (DevTools' HeapProfiler.stopSampling) taken with the
// objects young and old collections freed included: bytes allocated per site, not bytes alive.
// Two views: the allocating frame itself, and the nearest frame in this repository's code (a
// Buffer or a string is allocated inside Node or V8; what matters is which of our lines asked).

interface HeapNode {
  readonly id: number;
  readonly callFrame: { functionName: string; url: string; lineNumber: number };
  readonly selfSize: number;
  readonly children: readonly HeapNode[];
}

export interface SamplingHeapProfile {
  readonly head: HeapNode;
}

export interface AllocationRow {
  readonly name: string;
  readonly location: string;
  readonly bytes: number;
  readonly percent: number;
}

export interface AllocationSummary {
  readonly totalBytes: number;
  readonly bySite: readonly AllocationRow[];
  readonly byOwnCode: readonly AllocationRow[];
}

export function summarizeHeapProfile(profile: SamplingHeapProfile, rootDir: string, top = 25): AllocationSummary {
  const bySite = new Map<string, { name: string; location: string; bytes: number }>();
  const byOwn = new Map<string, { name: string; location: string; bytes: number }>();
  let totalBytes = 0;
  const add = (map: typeof bySite, name: string, location: string, bytes: number): void => {
    const key = `${name} ${location}`;
    const row = map.get(key) ?? { name, location, bytes: 0 };
    row.bytes += bytes;
    map.set(key, row);
  };
  // Iterative walk: stacks can be deep; `own` is the nearest ancestor frame in our code.
  const stack: { node: HeapNode; own: { name: string; location: string } | null }[] = [
    { node: profile.head, own: null },
  ];
  while (stack.length > 0) {
    const { node, own: parentOwn } = stack.pop() as (typeof stack)[number];
    const frame = node.callFrame;
    const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
    const location = frame.url === '' ? '(native)' : `${shortUrl(frame.url, rootDir)}:${frame.lineNumber + 1}`;
    const mine = frame.url.includes(rootDir) && !frame.url.includes('/node_modules/');
    const own = mine ? { name, location } : parentOwn;
    if (node.selfSize > 0) {
      totalBytes += node.selfSize;
      add(bySite, name, location, node.selfSize);
      add(byOwn, own?.name ?? '(outside our code)', own?.location ?? '', node.selfSize);
    }
    for (const child of node.children) stack.push({ node: child, own });
  }
  const rows = (map: typeof bySite): AllocationRow[] =>
    [...map.values()]
      .sort((a, b) => b.bytes - a.bytes)
      .slice(0, top)
      .map((r) => ({ ...r, percent: (100 * r.bytes) / Math.max(1, totalBytes) }));
  return { totalBytes, bySite: rows(bySite), byOwnCode: rows(byOwn) };
}

function shortUrl(url: string, rootDir: string): string {
  const path = url.startsWith('file://') ? url.slice('file://'.length) : url;
  return rootDir !== '' && path.startsWith(rootDir) ? path.slice(rootDir.length) : path;
}
