// The lock bench's two measurements, for either system (lock-protocols.ts), over the bench's
// keep-alive HTTP/1.1 client, clients spread over every member:
//   - uncontended: C clients, each with its own lease and lock name, acquire + release in a
//     closed loop (N pairs each, time-capped): pair latency and pairs/s;
//   - hand-off: W waiters queued on one lock; the holder releases, the next waiter's grant arrives,
//     it releases at once and queues again (so W stay queued): release sent -> grant received.
// Every answer other than 200 stops the case with an error naming the request: a wrong answer or a
// stuck waiter is a finding, not a data point.
import { closeEndpoints, openEndpoints, send, type Endpoint } from './http-client.js';
import { LatencyHistogram, type HistogramSummary } from './histogram.js';
import type { LockProtocol } from './lock-protocols.js';
import { HandoffRecorder } from './lock-stats.js';
import type { Protocol, RequestSpec } from './protocols.js';

export interface LockCallOptions {
  /** Lease TTL: longer than the whole bench, so no lease needs renewing while it runs. */
  readonly ttlSeconds: number;
  readonly requestTimeoutMs: number;
}

async function call(protocol: LockProtocol, endpoint: Endpoint, spec: RequestSpec, timeoutMs: number, what: string): Promise<Buffer> {
  const answer = await send(endpoint, spec, true, timeoutMs);
  if (answer.status !== 200) {
    throw new Error(`${protocol.system} ${what} (${spec.path}): HTTP ${answer.status} ${answer.body.toString('utf8').slice(0, 300)}`);
  }
  return answer.body;
}

/** Grants `count` leases, 32 requests at a time, spread over the endpoints. */
export async function grantLeases(protocol: LockProtocol, endpoints: readonly Endpoint[], count: number, options: LockCallOptions): Promise<string[]> {
  const ids: string[] = new Array<string>(count);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(32, count) }, async () => {
    while (next < count) {
      const i = next++;
      const endpoint = endpoints[i % endpoints.length] as Endpoint;
      const body = await call(protocol, endpoint, protocol.grantLease(options.ttlSeconds), options.requestTimeoutMs, 'lease grant');
      ids[i] = protocol.leaseId(body);
    }
  }));
  return ids;
}

export interface UncontendedOptions extends LockCallOptions {
  readonly clients: number;
  /** Acquire + release pairs per client, measured. */
  readonly loops: number;
  /** Unrecorded pairs per client first (JIT, connections), for at most warmupCapMs. */
  readonly warmupLoops: number;
  readonly warmupCapMs: number;
  /** The measured phase stops here even if the loops are not done. */
  readonly capMs: number;
  /** Then this many plain puts per client (for at most capMs / 2), as a baseline of one committed write on the same path. */
  readonly putLoops: number;
}

export interface UncontendedResult {
  readonly system: string;
  readonly clients: number;
  readonly pairs: number;
  readonly seconds: number;
  readonly pairsPerSecond: number;
  /** Acquire sent -> release answered. */
  readonly pair: HistogramSummary;
  readonly acquire: HistogramSummary;
  /** One 256-byte put (the baseline), same clients and members. */
  readonly put: HistogramSummary;
}

/** Uncontended acquire + release; lock names `${namePrefix}${client}`, one lease per client. */
export class UncontendedCase {
  private constructor(
    private readonly protocol: LockProtocol,
    private readonly kv: Protocol,
    private readonly endpoints: Endpoint[],
    private readonly leases: readonly string[],
    private readonly namePrefix: string,
  ) {}

  static async open(protocol: LockProtocol, kv: Protocol, urls: readonly URL[], clients: number, namePrefix: string, options: LockCallOptions): Promise<UncontendedCase> {
    const endpoints = openEndpoints(urls, clients + urls.length);
    try {
      return new UncontendedCase(protocol, kv, endpoints, await grantLeases(protocol, endpoints, clients, options), namePrefix);
    } catch (error) {
      closeEndpoints(endpoints);
      throw error;
    }
  }

  async run(options: UncontendedOptions): Promise<UncontendedResult> {
    const clients = Math.min(options.clients, this.leases.length);
    const pair = new LatencyHistogram();
    const acquire = new LatencyHistogram();
    const loop = async (client: number, loops: number, deadline: number, record: boolean): Promise<number> => {
      const endpoint = this.endpoints[client % this.endpoints.length] as Endpoint;
      const name = `${this.namePrefix}${client}`;
      const lease = this.leases[client] as string;
      let done = 0;
      for (; done < loops && performance.now() < deadline; done++) {
        const started = performance.now();
        const body = await call(this.protocol, endpoint, this.protocol.acquire(name, lease, 5_000), options.requestTimeoutMs, 'acquire');
        const acquiredAt = performance.now();
        await call(this.protocol, endpoint, this.protocol.release(name, this.protocol.acquiredKey(body)), options.requestTimeoutMs, 'release');
        if (record) {
          acquire.record((acquiredAt - started) * 1000);
          pair.record((performance.now() - started) * 1000);
        }
      }
      return done;
    };
    const all = (loops: number, capMs: number, record: boolean): Promise<number[]> => {
      const deadline = performance.now() + capMs;
      return Promise.all(Array.from({ length: clients }, (_, c) => loop(c, loops, deadline, record)));
    };
    await all(options.warmupLoops, options.warmupCapMs, false);
    const started = performance.now();
    const done = await all(options.loops, options.capMs, true);
    const seconds = (performance.now() - started) / 1000;
    const pairs = done.reduce((a, b) => a + b, 0);
    const put = new LatencyHistogram();
    const value = Buffer.alloc(256, 0x61);
    const putDeadline = performance.now() + options.capMs / 2;
    await Promise.all(Array.from({ length: clients }, async (_, client) => {
      const endpoint = this.endpoints[client % this.endpoints.length] as Endpoint;
      for (let n = 0; n < options.putLoops && performance.now() < putDeadline; n++) {
        const started = performance.now();
        const answer = await send(endpoint, this.kv.put(`/bench/lock-put/${client}`, value), false, options.requestTimeoutMs);
        if (answer.status >= 300) throw new Error(`${this.kv.system} put: HTTP ${answer.status}`);
        put.record((performance.now() - started) * 1000);
      }
    }));
    return {
      system: this.protocol.system,
      clients,
      pairs,
      seconds,
      pairsPerSecond: pairs / seconds,
      pair: pair.summary(),
      acquire: acquire.summary(),
      put: put.summary(),
    };
  }

  close(): void {
    closeEndpoints(this.endpoints);
  }
}

export interface HandoffOptions extends LockCallOptions {
  readonly waiters: number;
  /** Baton's waitMs per acquire (at most 300,000); longer than the case runs. */
  readonly waitMs: number;
  /** No grant this long after a release: the case fails as stuck. */
  readonly stallMs: number;
  /** Setup (leases, queueing every waiter) must finish within this. */
  readonly setupMs: number;
}

export interface HandoffResult {
  readonly system: string;
  readonly waiters: number;
  readonly handoffs: number;
  readonly seconds: number;
  readonly latency: HistogramSummary;
  /** The release request alone (sent -> answered), for reading a hand-off's parts. */
  readonly release: HistogramSummary;
}

/** Waiters are queued this many at a time during setup. */
const queueBatch = 50;

interface RunState {
  remaining: number;
  readonly deadline: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/**
 * W + 1 clients on one lock: client 0 takes it first, the other W queue behind it. Between runs
 * the last granted client keeps the lock, so every run starts from W queued waiters.
 */
export class HandoffCase {
  private readonly recorder = new HandoffRecorder();
  /** Release request latencies in the current run: the committed-delete part of a hand-off. */
  private releases = new LatencyHistogram();
  private holder: { client: number; key: string } | null = null;
  private runState: RunState | null = null;
  private failure: Error | null = null;
  private closed = false;
  private stallTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly protocol: LockProtocol,
    private readonly endpoints: Endpoint[],
    private readonly leases: readonly string[],
    private readonly name: string,
    private readonly options: HandoffOptions,
  ) {}

  static async open(protocol: LockProtocol, urls: readonly URL[], name: string, options: HandoffOptions): Promise<HandoffCase> {
    // Every client has at most one request in flight, plus the count polls.
    const endpoints = openEndpoints(urls, options.waiters + 1 + 2 * urls.length);
    let opened: HandoffCase | null = null;
    try {
      const deadline = performance.now() + options.setupMs;
      const leases = await grantLeases(protocol, endpoints, options.waiters + 1, options);
      opened = new HandoffCase(protocol, endpoints, leases, name, options);
      const handoff = opened;
      handoff.contend(0);
      await handoff.until(() => handoff.recorder.isHeld, deadline, 'the first holder was not granted');
      // Queue the waiters in batches (a burst of 1,000 at once is not what is measured here).
      let entries = 0;
      let countError = '';
      for (let from = 1; from <= options.waiters; from += queueBatch) {
        const to = Math.min(options.waiters, from + queueBatch - 1);
        for (let client = from; client <= to; client++) handoff.contend(client);
        await handoff.until(async () => {
          try {
            entries = await handoff.countEntries();
            countError = '';
          } catch (error) {
            countError = ` (last count: ${(error as Error).message})`; // e.g. a 503 during an election
          }
          return entries === to + 1;
        }, deadline, () => `${entries} of ${to + 1} entries queued${countError}`);
      }
      return handoff;
    } catch (error) {
      opened?.close();
      closeEndpoints(endpoints);
      throw error;
    }
  }

  /** Hands the lock on `handoffs` times (or until capMs), timing each release -> next grant. */
  async run(handoffs: number, capMs: number): Promise<HandoffResult> {
    if (this.failure !== null) throw this.failure;
    if (this.holder === null || this.runState !== null) throw new Error('a hand-off run needs a holder and no run going');
    const started = performance.now();
    this.recorder.take();
    this.releases = new LatencyHistogram();
    await new Promise<void>((resolve, reject) => {
      this.runState = { remaining: handoffs, deadline: started + capMs, resolve, reject };
      this.handOff();
    });
    const seconds = (performance.now() - started) / 1000;
    const latencies = this.recorder.take();
    const histogram = new LatencyHistogram();
    for (const ms of latencies) histogram.record(ms * 1000);
    return {
      system: this.protocol.system,
      waiters: this.options.waiters,
      handoffs: latencies.length,
      seconds,
      latency: histogram.summary(),
      release: this.releases.summary(),
    };
  }

  /** Drops every connection: the servers delete the abandoned waiters' entries (leases end later). */
  close(): void {
    this.closed = true;
    clearTimeout(this.stallTimer);
    closeEndpoints(this.endpoints);
  }

  private endpointOf(client: number): Endpoint {
    return this.endpoints[client % this.endpoints.length] as Endpoint;
  }

  private contend(client: number): void {
    const spec = this.protocol.acquire(this.name, this.leases[client] as string, this.options.waitMs);
    const timeoutMs = this.options.waitMs + this.options.requestTimeoutMs;
    call(this.protocol, this.endpointOf(client), spec, timeoutMs, `acquire by client ${client}`).then(
      (body) => this.granted(client, this.protocol.acquiredKey(body), performance.now()),
      (error: Error) => this.fail(error),
    );
  }

  private granted(client: number, key: string, atMs: number): void {
    if (this.closed) return;
    clearTimeout(this.stallTimer);
    const latency = this.recorder.granted(atMs, `client ${client}`);
    const violation = this.recorder.violations[0];
    if (violation !== undefined) return this.fail(new Error(`${this.protocol.system}: two holders at once: ${violation}`));
    this.holder = { client, key };
    const run = this.runState;
    if (run === null || latency === null) return;
    run.remaining -= 1;
    if (run.remaining > 0 && performance.now() < run.deadline) return this.handOff();
    this.runState = null;
    run.resolve();
  }

  private handOff(): void {
    const holder = this.holder;
    if (holder === null) throw new Error('hand-off without a holder');
    this.holder = null;
    const sentAt = performance.now();
    this.recorder.releaseSent(sentAt);
    this.stallTimer = setTimeout(() => {
      this.fail(new Error(`${this.protocol.system}: no waiter was granted the lock within ${this.options.stallMs} ms of a release (stuck waiter)`));
    }, this.options.stallMs);
    call(this.protocol, this.endpointOf(holder.client), this.protocol.release(this.name, holder.key), this.options.requestTimeoutMs, `release by client ${holder.client}`)
      .then(() => {
        if (this.runState !== null) this.releases.record((performance.now() - sentAt) * 1000);
        if (!this.closed) this.contend(holder.client);
      }, (error: Error) => this.fail(error));
  }

  private fail(error: Error): void {
    if (this.closed || this.failure !== null) return;
    this.failure = error;
    clearTimeout(this.stallTimer);
    const run = this.runState;
    this.runState = null;
    run?.reject(error);
  }

  private async countEntries(): Promise<number> {
    const body = await call(this.protocol, this.endpointOf(0), this.protocol.countEntries(this.name), this.options.requestTimeoutMs, 'count');
    return this.protocol.entryCount(body);
  }

  private async until(condition: () => boolean | Promise<boolean>, deadline: number, what: string | (() => string)): Promise<void> {
    for (;;) {
      if (this.failure !== null) throw this.failure;
      if (await condition()) return;
      if (performance.now() > deadline) {
        throw new Error(`${this.protocol.system} hand-off setup: ${typeof what === 'string' ? what : what()} within ${this.options.setupMs} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
