// The closed-loop load generator: N clients, each sending its next request as soon as the previous
// one answers. After a warm-up, it counts the requests that complete inside the measured window
// (throughput) and records the latency of every request that completes after the warm-up.
import { closeEndpoints, openEndpoints, send, type Endpoint } from './http-client.js';
import { LatencyHistogram, type HistogramSummary } from './histogram.js';
import type { Protocol, RequestSpec, WorkloadName } from './protocols.js';

export interface LoadOptions {
  readonly protocol: Protocol;
  readonly endpoints: readonly URL[];
  readonly workload: WorkloadName;
  readonly clients: number;
  readonly durationMs: number;
  readonly warmupMs: number;
  /** Keys `${keyPrefix}000000` ... : puts and gets pick among them at random. */
  readonly keyCount: number;
  readonly valueBytes: number;
  readonly requestTimeoutMs: number;
  readonly keyPrefix?: string;
  /** Called when the measured window opens and when it closes (e.g. to read CPU counters). */
  readonly onWindow?: (edge: 'start' | 'end') => void;
}

export interface LoadResult {
  readonly system: string;
  readonly workload: WorkloadName;
  readonly clients: number;
  readonly seconds: number;
  readonly completed: number;
  readonly opsPerSecond: number;
  readonly latency: HistogramSummary;
  /** The same per endpoint, in `endpoints` order (a leader and its followers differ). */
  readonly latencyByEndpoint: readonly HistogramSummary[];
  /**
   * Failed requests by HTTP status or error message: not in throughput; error answers are in the
   * latency figures, connection failures are not.
   */
  readonly errors: Readonly<Record<string, number>>;
  /** Transactions whose compare did not hold (answered, counted, retried with the version read). */
  readonly casMisses: number;
  /** CPU the bench process itself used in the window, in cores (1 = one core busy). */
  readonly clientCpuCores: number;
  /** Set by the caller when it can see the servers' processes: their CPU in cores, and per op. */
  serverCpuCores?: number;
  serverCpuUsPerOp?: number;
  /** The same for the leader's processes alone, and for a follower's (the followers' mean). */
  leaderCpuUsPerOp?: number;
  followerCpuUsPerOp?: number;
}

export const defaultKeyPrefix = '/bench/k/';

export function benchKey(prefix: string, i: number): string {
  return `${prefix}${String(i).padStart(6, '0')}`;
}

/** A 256-byte (or any size) printable ASCII value, so it is the same bytes in every encoding. */
export function benchValue(bytes: number): Buffer {
  const value = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) value[i] = 0x61 + (i % 26);
  return value;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  if (!(options.clients >= 1 && options.durationMs > 0 && options.warmupMs >= 0)) {
    throw new Error('clients >= 1, duration > 0 and warm-up >= 0 are required');
  }
  const endpoints = openEndpoints(options.endpoints, options.clients);
  const state: RunState = {
    histogram: new LatencyHistogram(),
    byEndpoint: options.endpoints.map(() => new LatencyHistogram()),
    errors: {},
    completed: 0,
    casMisses: 0,
    measureStartMs: 0,
    measureEndMs: 0,
  };
  const startMs = performance.now();
  state.measureStartMs = startMs + options.warmupMs;
  state.measureEndMs = state.measureStartMs + options.durationMs;
  let clientCpuStart = process.cpuUsage();
  let clientCpu = { user: 0, system: 0 };
  // Each edge runs once: on its timer, or when the clients finish first (timers can fire late).
  let opened = false;
  let closed = false;
  const open = (): void => {
    if (opened) return;
    opened = true;
    clientCpuStart = process.cpuUsage();
    options.onWindow?.('start');
  };
  const close = (): void => {
    if (closed) return;
    open();
    closed = true;
    clientCpu = process.cpuUsage(clientCpuStart);
    options.onWindow?.('end');
  };
  const windowTimers = [
    setTimeout(open, options.warmupMs),
    setTimeout(close, options.warmupMs + options.durationMs),
  ];
  try {
    const clients = [];
    for (let i = 0; i < options.clients; i++) {
      const endpoint = endpoints[i % endpoints.length] as Endpoint;
      clients.push(runClient(options, endpoint, i, state, i % endpoints.length));
    }
    await Promise.all(clients);
    close();
  } finally {
    for (const timer of windowTimers) clearTimeout(timer);
    closeEndpoints(endpoints);
  }
  const seconds = options.durationMs / 1000;
  return {
    system: options.protocol.system,
    workload: options.workload,
    clients: options.clients,
    seconds,
    completed: state.completed,
    opsPerSecond: state.completed / seconds,
    latency: state.histogram.summary(),
    latencyByEndpoint: state.byEndpoint.map((h) => h.summary()),
    errors: state.errors,
    casMisses: state.casMisses,
    clientCpuCores: (clientCpu.user + clientCpu.system) / 1e6 / seconds,
  };
}

interface RunState {
  readonly histogram: LatencyHistogram;
  readonly byEndpoint: readonly LatencyHistogram[];
  readonly errors: Record<string, number>;
  completed: number;
  casMisses: number;
  measureStartMs: number;
  measureEndMs: number;
}

async function runClient(
  options: LoadOptions,
  endpoint: Endpoint,
  clientIndex: number,
  state: RunState,
  endpointIndex: number,
): Promise<void> {
  const record = (us: number): void => {
    state.histogram.record(us);
    state.byEndpoint[endpointIndex]?.record(us);
  };
  const { protocol, workload } = options;
  const prefix = options.keyPrefix ?? defaultKeyPrefix;
  const value = benchValue(options.valueBytes);
  const random = xorshift(0x9e3779b9 ^ (clientIndex * 0x85ebca6b + 1));
  // Each txn client owns one key, so its CAS only misses on its first try (unknown version).
  const casKey = `${prefix}cas-${String(clientIndex).padStart(4, '0')}`;
  let casVersion = 0;
  while (performance.now() < state.measureEndMs) {
    let spec: RequestSpec;
    const key = benchKey(prefix, random() % options.keyCount);
    if (workload === 'put') spec = protocol.put(key, value);
    else if (workload === 'txn') spec = protocol.cas(casKey, casVersion, value);
    else spec = protocol.get(key, workload === 'get-ser');
    const sentMs = performance.now();
    try {
      const answer = await send(endpoint, spec, workload === 'txn', options.requestTimeoutMs);
      const doneMs = performance.now();
      if (answer.status < 200 || answer.status > 299) {
        // An error answer still took the client that long (a 504 waited for the server's
        // timeout), so its latency counts; it just is not a completed operation.
        if (doneMs >= state.measureStartMs) record((doneMs - sentMs) * 1000);
        countError(state, String(answer.status), doneMs);
        continue;
      }
      if (workload === 'txn') {
        const outcome = protocol.casOutcome(casVersion, answer.body);
        casVersion = outcome.version;
        if (!outcome.succeeded && doneMs >= state.measureStartMs) state.casMisses += 1;
      }
      if (doneMs < state.measureStartMs) continue;
      record((doneMs - sentMs) * 1000);
      if (doneMs <= state.measureEndMs) state.completed += 1;
    } catch (error) {
      countError(state, (error as Error).message, performance.now());
      // A refused or reset connection fails fast; pause so a dead endpoint is not a busy loop.
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

function countError(state: RunState, reason: string, atMs: number): void {
  if (atMs < state.measureStartMs) return;
  state.errors[reason] = (state.errors[reason] ?? 0) + 1;
}

/** A small seeded generator: key choice only needs to be spread, not unpredictable. */
function xorshift(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/** Writes every key once (so gets find them), with a few clients in parallel. */
export async function populateKeys(
  protocol: Protocol,
  urls: readonly URL[],
  keyCount: number,
  valueBytes: number,
  keyPrefix = defaultKeyPrefix,
): Promise<void> {
  const endpoints = openEndpoints(urls, 16);
  const value = benchValue(valueBytes);
  let next = 0;
  try {
    const worker = async (w: number): Promise<void> => {
      const endpoint = endpoints[w % endpoints.length] as Endpoint;
      for (let i = next++; i < keyCount; i = next++) {
        const key = benchKey(keyPrefix, i);
        const answer = await send(endpoint, protocol.put(key, value), true, 10_000);
        if (answer.status < 200 || answer.status > 299) {
          const text = answer.body.toString('utf8').slice(0, 200);
          const what = `${protocol.system}: populating ${key}`;
          throw new Error(`${what} answered ${answer.status}: ${text}`);
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, w) => worker(w)));
  } finally {
    closeEndpoints(endpoints);
  }
}
