// A fuzz run: a real cell on loopback, known state written first, then N seeded hostile requests
// over HTTP, the WebSocket stream and the etcd gRPC facade, each judged against the contract;
// afterwards no node exited, the known state is unchanged, and memory and connections are back
// near their baseline. Every failure names its case and the command that replays it.
import type { Client } from '@grpc/grpc-js';
import { drawCase, type CaseContext, type FuzzCase } from './cases.js';
import { connectionCount, listenerPid, residentBytes, startFuzzCell, type FuzzCell, type FuzzNode } from './cell.js';
import { grpcClient, runGrpcCase } from './grpc-exchange.js';
import { runHttpCase, type ExchangeResult } from './http-exchange.js';
import { Draw } from './random.js';
import { runStreamCase } from './stream-exchange.js';

export interface FuzzOptions {
  readonly requests: number;
  readonly seed: bigint;
  readonly members: number;
  readonly grpc: boolean;
  /** Cases in flight at once. */
  readonly concurrency: number;
  /** The bound on one case: past it, the case hangs. */
  readonly caseTimeoutMs: number;
  /** Run only this case of the run (a replay). */
  readonly only?: number;
  readonly log?: (line: string) => void;
}

export const defaultFuzzOptions: FuzzOptions = {
  requests: 500, seed: 1n, members: 3, grpc: true, concurrency: 8, caseTimeoutMs: 10_000,
};

export interface FuzzFailure {
  readonly index: number;
  readonly label: string;
  readonly problem: string;
  readonly request: string;
  readonly replay: string;
}

export interface FuzzReport {
  readonly seed: bigint;
  readonly cases: number;
  readonly failures: readonly FuzzFailure[];
  /** Problems of the run as a whole (a node exited, the known state changed, leaks). */
  readonly runProblems: readonly string[];
  readonly byChannel: Readonly<Record<string, number>>;
  readonly byStatus: Readonly<Record<string, number>>;
  readonly durationMs: number;
  readonly memory: readonly { node: string; baselineBytes: number | null; afterBytes: number | null }[];
  readonly connections: readonly { node: string; baseline: number | null; after: number | null }[];
}

const knownKeyCount = 12;
/** Memory may grow this much over the run (V8 keeps heap it grew into for the big bodies). */
const memoryGrowthBytesMax = 128 * 1024 * 1024;
const connectionSlack = 2;

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const started = Date.now();
  const log = options.log ?? (() => {});
  const cell = await startFuzzCell({ members: options.members, readyTimeoutMs: 30_000 });
  try {
    return await attack(cell, options, log, started);
  } finally {
    await cell.stop();
  }
}

async function attack(cell: FuzzCell, options: FuzzOptions, log: (line: string) => void, started: number): Promise<FuzzReport> {
  const first = cell.nodes[0] as FuzzNode;
  const known = await writeKnownState(first);
  const context: CaseContext = {
    knownKeys: [...known.keys()], valueBytesMax: 1024 * 1024, requestBytesMax: 1.5 * 1024 * 1024, grpc: options.grpc,
  };
  await settle(500);
  const pids = new Map(cell.nodes.map((node) => [node.name, listenerPid(node.httpPort)]));
  const baselineMemory = new Map(cell.nodes.map((node) => [node.name, residentBytes(pids.get(node.name) ?? null)]));
  const nodePids = [...pids.values()];
  const baselineConnections = new Map(cell.nodes.map((node) => [node.name, connectionCount(node, nodePids)]));
  log(`cell ready (${cell.nodes.map((n) => `${n.name} http ${n.httpPort} grpc ${n.grpcPort}`).join(', ')}); known state: ${known.size} keys`);

  const clients = new Map<string, Client>(options.grpc ? cell.nodes.map((node) => [node.name, grpcClient(node.grpcPort)]) : []);
  const failures: FuzzFailure[] = [];
  const runProblems: string[] = [];
  const byChannel: Record<string, number> = {};
  const byStatus: Record<string, number> = {};
  const indexes = options.only !== undefined ? [options.only] : Array.from({ length: options.requests }, (_, i) => i);
  let next = 0;
  let stopped = false;
  const worker = async (): Promise<void> => {
    while (!stopped && next < indexes.length) {
      const index = indexes[next++] as number;
      const fuzzCase = drawCase(Draw.forCase(options.seed, index), context, index);
      const node = cell.nodes[index % cell.nodes.length] as FuzzNode;
      const result = await runCase(node, clients.get(node.name), fuzzCase, context, options.caseTimeoutMs);
      byChannel[fuzzCase.channel] = (byChannel[fuzzCase.channel] ?? 0) + 1;
      const statusName = `${fuzzCase.channel === 'grpc' ? 'grpc ' : ''}${result.status ?? '-'}`;
      byStatus[statusName] = (byStatus[statusName] ?? 0) + 1;
      if (result.problem !== null) {
        const failure = {
          index, label: `${fuzzCase.label} -> ${node.name}`, problem: result.problem, request: describeCase(fuzzCase),
          replay: `npm run fuzz -- --seed ${options.seed} --requests ${options.requests} --members ${options.members} --only ${index}`,
        };
        failures.push(failure);
        log(`FAIL ${failure.label}: ${failure.problem}\n  request: ${failure.request}\n  replay: ${failure.replay}`);
      }
      if (index % 50 === 49) {
        const dead = cell.nodes.filter((n) => !cell.cell.isRunning(n.name));
        if (dead.length > 0) {
          runProblems.push(`node ${dead.map((n) => n.name).join(', ')} exited during cases up to #${index}: ${cell.cell.tail((dead[0] as FuzzNode).name, 10)}`);
          stopped = true;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));
  for (const client of clients.values()) client.close();

  for (const node of cell.nodes) {
    if (!cell.cell.isRunning(node.name)) runProblems.push(`node ${node.name} exited: ${cell.cell.tail(node.name, 10)}`);
  }
  if (runProblems.length === 0) runProblems.push(...(await checkKnownState(cell, known)));
  const connections = await settledConnections(cell, baselineConnections, nodePids);
  for (const entry of connections) {
    if (entry.baseline !== null && entry.after !== null && entry.after > entry.baseline + connectionSlack) {
      runProblems.push(`${entry.node} holds ${entry.after} client connections after the run (baseline ${entry.baseline})`);
    }
  }
  const memory = cell.nodes.map((node) => ({
    node: node.name, baselineBytes: baselineMemory.get(node.name) ?? null, afterBytes: residentBytes(pids.get(node.name) ?? null),
  }));
  for (const entry of memory) {
    if (entry.baselineBytes !== null && entry.afterBytes !== null && entry.afterBytes > entry.baselineBytes + memoryGrowthBytesMax) {
      runProblems.push(`${entry.node} resident memory ${mib(entry.afterBytes)} after the run (baseline ${mib(entry.baselineBytes)})`);
    }
  }
  return {
    seed: options.seed, cases: indexes.length, failures, runProblems, byChannel, byStatus, durationMs: Date.now() - started, memory, connections,
  };
}

function runCase(node: FuzzNode, client: Client | undefined, fuzzCase: FuzzCase, context: CaseContext, timeoutMs: number): Promise<ExchangeResult> {
  if (fuzzCase.channel === 'http') return runHttpCase(node.httpPort, fuzzCase, timeoutMs);
  if (fuzzCase.channel === 'stream') return runStreamCase(node.httpPort, fuzzCase, context.knownKeys[0] as string, timeoutMs);
  if (client === undefined) return Promise.resolve({ problem: null, status: null });
  return runGrpcCase(client, fuzzCase, timeoutMs);
}

interface KnownKey {
  readonly value: string;
  readonly version: number;
  readonly createRevision: number;
  readonly modRevision: number;
}

/** Writes /known/k0.. (some twice, one with bytes that are not UTF-8) and records what they hold. */
async function writeKnownState(node: FuzzNode): Promise<Map<string, KnownKey>> {
  const base = `http://127.0.0.1:${node.httpPort}`;
  for (let i = 0; i < knownKeyCount; i++) {
    const body = i === 1 ? Buffer.from([0xff, 0x00, 0xfe]) : Buffer.from(`known-${i}`);
    for (let times = i % 3 === 0 ? 2 : 1; times > 0; times--) {
      const res = await fetch(`${base}/v1/kv/known/k${i}`, { method: 'PUT', body });
      if (res.status !== 200 && res.status !== 201) throw new Error(`writing the known state: ${res.status} ${await res.text()}`);
    }
  }
  return readKnownState(base, 'linearizable');
}

async function readKnownState(base: string, consistency: string): Promise<Map<string, KnownKey>> {
  const res = await fetch(`${base}/v1/kv/known/?prefix=true&encoding=base64&consistency=${consistency}`, { signal: AbortSignal.timeout(10_000) });
  const body = (await res.json()) as { kvs: { key: string; value: string; version: number; createRevision: number; modRevision: number }[] };
  const out = new Map<string, KnownKey>();
  for (const kv of body.kvs) {
    out.set(Buffer.from(kv.key, 'base64').toString('utf8'), { value: kv.value, version: kv.version, createRevision: kv.createRevision, modRevision: kv.modRevision });
  }
  return out;
}

async function checkKnownState(cell: FuzzCell, known: Map<string, KnownKey>): Promise<string[]> {
  const problems: string[] = [];
  for (const node of cell.nodes) {
    const base = `http://127.0.0.1:${node.httpPort}`;
    let now: Map<string, KnownKey>;
    try {
      now = await readKnownState(base, 'linearizable');
    } catch (error) {
      problems.push(`${node.name}: the known state could not be read: ${(error as Error).message}`);
      continue;
    }
    for (const [key, before] of known) {
      const after = now.get(key);
      if (JSON.stringify(after) !== JSON.stringify(before)) {
        problems.push(`${node.name}: known key ${key} changed: ${JSON.stringify(before)} -> ${JSON.stringify(after ?? null)}`);
      }
    }
    for (const key of now.keys()) if (!known.has(key)) problems.push(`${node.name}: a key appeared under /known/: ${key}`);
    const ready = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(5_000) }).then((r) => r.status, () => 0);
    if (ready !== 200) problems.push(`${node.name}: /readyz answers ${ready} after the run`);
  }
  return problems;
}

/** Connection counts once they settle back (closing sockets take a moment), at most ~10 s. */
async function settledConnections(
  cell: FuzzCell,
  baseline: Map<string, number | null>,
  nodePids: readonly (number | null)[],
): Promise<{ node: string; baseline: number | null; after: number | null }[]> {
  const read = (): { node: string; baseline: number | null; after: number | null }[] =>
    cell.nodes.map((node) => ({ node: node.name, baseline: baseline.get(node.name) ?? null, after: connectionCount(node, nodePids) }));
  let counts = read();
  for (let i = 0; i < 50; i++) {
    if (counts.every((c) => c.after === null || c.baseline === null || c.after <= c.baseline + connectionSlack)) break;
    await settle(200);
    counts = read();
  }
  return counts;
}

function settle(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The request, printable and bounded (raw bytes escaped; repeated body chunks summarized). */
export function describeCase(fuzzCase: FuzzCase): string {
  const clip = (text: string, max = 600): string => (text.length > max ? `${text.slice(0, max)}...(${text.length} chars)` : text);
  if (fuzzCase.channel === 'http') {
    const parts = fuzzCase.pieces.map((piece) => {
      const text = JSON.stringify(clip(piece.bytes.toString('latin1')));
      const pause = piece.delayMs > 0 ? `after ${piece.delayMs} ms ` : '';
      return piece.repeat === undefined ? `${pause}${text}` : `${pause}${piece.bytes.length} bytes x ${piece.repeat}`;
    });
    return `${parts.join(' + ')}${fuzzCase.endAfter ? ' then half-close' : ''}`;
  }
  if (fuzzCase.channel === 'stream') {
    return fuzzCase.frames.map((frame) => (typeof frame === 'string' ? JSON.stringify(clip(frame, 300)) : `binary ${frame.toString('hex').slice(0, 80)}`)).join(', ');
  }
  const request = Buffer.isBuffer(fuzzCase.request)
    ? `bytes ${fuzzCase.request.toString('hex').slice(0, 200)}`
    : clip(JSON.stringify(fuzzCase.request, (_name, value: unknown) =>
        (typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'Buffer')
          ? `0x${Buffer.from((value as { data: number[] }).data).toString('hex').slice(0, 80)}` : value));
  return `${fuzzCase.service}.${fuzzCase.method} ${request}`;
}
