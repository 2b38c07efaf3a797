// The clients of the cells world and the checkers on what they were told (issue 24). Per
// namespace, clients write keys of their own (puts, and compare-and-set txns on the value they
// last saw) and take the namespace's lock (a txn creating /N/lock if absent: its revision is the
// fencing token), all through the routing layer. Checked:
//  (2) tokens grow per namespace: a write acknowledged after another was acknowledged (in
//      simulated real time) has a greater revision, whichever cell took each of them;
//  (3) no acknowledged write lost: a compare-and-set that fails finds a value its client wrote
//      (the last acknowledged one, or one whose outcome was unknown), and so does the final read
//      of every key on the namespace's owner after the run.
// A write whose outcome is unknown is sent again with the same Request-ID a little later, as a
// real client retries, and so is a share of applied puts (an answer lost on its way; often across
// a move). A put sent again must answer its first revision; a compare-and-set retried must answer
// its first outcome (failing on the value it wrote itself means it applied before and its record
// was not found). Checked here; the cells' own check is that a Request-ID writes once.
import { isOwnKey } from '../../base/namespaces.js';
import type { Random } from '../../base/random.js';
import { chance, randomInt } from '../../base/random.js';
import { fromUtf8, utf8, type Command, type KeyValue, type TxnResult } from '../../mvcc/index.js';
import type { CellsLoop } from './cells-loop.js';
import type { RoutedOutcome, SimRouter } from './sim-router.js';
import type { CellsStats } from './types.js';

const clientsPerNamespace = 2;
const keysPerClient = 2;
/** Sends of a write of unknown outcome again (same Request-ID), each after 50-600 ms. */
const retriesMax = 3;
/** Applied puts sent again with their Request-ID (a lost answer, from the client's side). */
const resendShare = 0.3;

interface KeyState {
  /** What the key holds if every write with an unknown outcome failed (null: absent). */
  expected: string | null;
  /** Values of writes whose outcome was never learnt: any may be there. */
  readonly unknown: Set<string>;
}

export class CellsWorkload {
  private readonly keys = new Map<string, KeyState>();
  /** Per namespace: the highest revision acknowledged so far. */
  private readonly acknowledged = new Map<string, number>();
  private inFlight = 0;
  private stopAtMs = 0;
  private written = 0;

  constructor(
    private readonly loop: CellsLoop,
    private readonly router: SimRouter,
    private readonly random: Random,
    readonly prefixes: readonly string[],
    private readonly stats: CellsStats,
    /**
     * Whether writes are sent again (unknown outcomes, and a share of applied puts). Not with the
     * simulator's own move driver (sim-mover.ts), which moves no Request-ID records: a write sent
     * again there applies twice (seed 4).
     */
    private readonly retries = true,
  ) {}

  start(stopAtMs: number): void {
    this.stopAtMs = stopAtMs;
    for (const prefix of this.prefixes) {
      for (let client = 0; client < clientsPerNamespace; client++) {
        this.runClient(prefix, client).catch((error: unknown) => this.loop.report('exception', `client ${prefix}${client}: ${String(error)}`));
      }
    }
  }

  idle(): boolean {
    return this.inFlight === 0 && this.loop.nowMs >= this.stopAtMs;
  }

  private async runClient(prefix: string, client: number): Promise<void> {
    while (this.loop.nowMs < this.stopAtMs) {
      await this.loop.sleep(randomInt(this.random, 5, 40));
      if (this.loop.nowMs >= this.stopAtMs) return;
      this.inFlight++;
      try {
        const roll = randomInt(this.random, 0, 99);
        const key = `${prefix}c${client}k${randomInt(this.random, 0, keysPerClient - 1)}`;
        if (roll < 45) await this.put(prefix, key);
        else if (roll < 80) await this.compareAndSet(prefix, key);
        else await this.lockCycle(prefix, client);
      } finally {
        this.inFlight--;
      }
    }
  }

  private stateOf(key: string): KeyState {
    let state = this.keys.get(key);
    if (state === undefined) {
      state = { expected: null, unknown: new Set() };
      this.keys.set(key, state);
    }
    return state;
  }

  private nextValue(): string {
    return `v${++this.written}`;
  }

  private async put(prefix: string, key: string): Promise<void> {
    const value = this.nextValue();
    const floor = this.acknowledged.get(prefix) ?? 0;
    const op: Command = { type: 'put', key, value: utf8(value) };
    const answer = await this.sendRetrying(prefix, op, `w-${value}`);
    const state = this.stateOf(key);
    if (answer.kind === 'applied' && answer.outcome.result.type === 'put') {
      this.acknowledge(prefix, floor, answer.outcome.result.revision, `put ${key}=${value} on ${answer.cell}`);
      state.expected = value;
      if (this.retries && chance(this.random, resendShare)) await this.resend(prefix, op, `w-${value}`, answer);
    } else if (answer.kind === 'unknown') {
      this.stats.writesUnknown++;
      state.unknown.add(value);
    } else this.stats.writesRefused++;
  }

  private async compareAndSet(prefix: string, key: string): Promise<void> {
    const state = this.stateOf(key);
    const value = this.nextValue();
    const floor = this.acknowledged.get(prefix) ?? 0;
    const compare = state.expected === null
      ? { key, target: 'version' as const, op: '==' as const, value: 0 }
      : { key, target: 'value' as const, op: '==' as const, value: utf8(state.expected) };
    const answer = await this.sendRetrying(prefix, {
      type: 'txn', compare: [compare], success: [{ type: 'put', key, value: utf8(value) }], failure: [{ type: 'get', key }],
    }, `w-${value}`);
    if (answer.kind === 'unknown') {
      this.stats.writesUnknown++;
      state.unknown.add(value);
      return;
    }
    if (answer.kind !== 'applied' || answer.outcome.result.type !== 'txn') {
      this.stats.writesRefused++;
      return;
    }
    const result: TxnResult = answer.outcome.result;
    if (result.succeeded) {
      this.acknowledge(prefix, floor, result.revision, `cas ${key}=${value} on ${answer.cell}`);
      state.expected = value;
      return;
    }
    this.stats.casFailed++;
    const found = result.results[0]?.type === 'get' ? (result.results[0].kvs[0] ?? null) : null;
    if (found !== null && fromUtf8(found.value) === value) {
      this.loop.report('a retry gets the first outcome', `compare-and-set w-${value} on ${answer.cell} failed on ${key}=${value}, its own value: it applied before and its retry did not find its record`);
    }
    this.judgeFound(key, found === null ? null : fromUtf8(found.value), `a compare-and-set on ${answer.cell} at revision ${result.revision}`);
  }

  /**
   * Sends an applied put again with its Request-ID a little later, as a client whose answer was
   * lost does (often across a move): the answer must be the first one, and nothing applies again.
   */
  private async resend(prefix: string, op: Command, requestId: string, first: RoutedOutcome & { kind: 'applied' }): Promise<void> {
    await this.loop.sleep(randomInt(this.random, 50, 1_500));
    this.stats.writesRetried++;
    const again = await this.router.send(prefix, op, requestId);
    if (again.kind !== 'applied') return;
    this.stats.retriesAnswered++;
    const before = first.outcome.result.type === 'put' ? first.outcome.result.revision : null;
    const now = again.outcome.result.type === 'put' ? again.outcome.result.revision : null;
    if (before !== now) {
      this.loop.report('a retry gets the first outcome', `${requestId} applied at revision ${before} on ${first.cell}, sent again answered revision ${now} on ${again.cell}`);
    }
  }

  /** Sends `op`; while its outcome is unknown, again with the same Request-ID a little later. */
  private async sendRetrying(prefix: string, op: Command, requestId: string): Promise<RoutedOutcome> {
    const first = await this.router.send(prefix, op, requestId);
    if (first.kind !== 'unknown' || !this.retries) return first;
    for (let retry = 0; retry < retriesMax; retry++) {
      await this.loop.sleep(randomInt(this.random, 50, 600));
      this.stats.writesRetried++;
      const answer = await this.router.send(prefix, op, requestId);
      if (answer.kind === 'applied') {
        this.stats.retriesAnswered++;
        return answer;
      }
      // Anything else says nothing of the first send, which may have applied: still unknown.
    }
    return first;
  }

  /** Try-lock, hold a while, release: the acquire's revision is the holder's fencing token. */
  private async lockCycle(prefix: string, client: number): Promise<void> {
    const key = `${prefix}lock`;
    const holder = `${prefix}c${client}-${++this.written}`;
    const floor = this.acknowledged.get(prefix) ?? 0;
    const answer = await this.router.send(prefix, {
      type: 'txn', compare: [{ key, target: 'createRevision', op: '==', value: 0 }], success: [{ type: 'put', key, value: utf8(holder) }], failure: [],
    }, `l-${holder}`);
    if (answer.kind === 'applied' && answer.outcome.result.type === 'txn') {
      if (!answer.outcome.result.succeeded) return; // held by another
      this.stats.lockGrants++;
      this.acknowledge(prefix, floor, answer.outcome.result.revision, `lock ${key} granted to ${holder} on ${answer.cell} (token)`);
      await this.loop.sleep(randomInt(this.random, 10, 80));
    } else if (answer.kind !== 'unknown') return;
    // Released only by its holder (the value compared), so a retry or a stale unknown is harmless.
    for (let attempt = 0; attempt < 20; attempt++) {
      const release = await this.router.send(prefix, {
        type: 'txn', compare: [{ key, target: 'value', op: '==', value: utf8(holder) }], success: [{ type: 'delete', key }], failure: [],
      }, `r-${holder}-${attempt}`);
      if (release.kind === 'applied') return;
      await this.loop.sleep(chance(this.random, 0.5) ? 20 : 60);
    }
  }

  /** Checker (2): an acknowledged write's revision is above every one acknowledged before it was sent. */
  private acknowledge(prefix: string, floor: number, revision: number, what: string): void {
    this.stats.writesAcknowledged++;
    if (revision <= floor) {
      this.loop.report('tokens grow per namespace', `${what} at revision ${revision}, not above revision ${floor} acknowledged for ${prefix} before it was sent`);
    }
    this.acknowledged.set(prefix, Math.max(this.acknowledged.get(prefix) ?? 0, revision));
  }

  /** Checker (3): a key holds what its client last had acknowledged, or a write of unknown outcome. */
  private judgeFound(key: string, found: string | null, where: string): void {
    const state = this.stateOf(key);
    if (found === state.expected) return;
    if (found !== null && state.unknown.has(found)) {
      state.expected = found;
      return;
    }
    this.loop.report('no acknowledged write lost', `${where} found ${key}=${found ?? '(absent)'}; its client last had ${state.expected ?? '(absent)'} acknowledged (unknown outcomes: ${[...state.unknown].slice(-5).join(' ') || 'none'})`);
    state.expected = found;
  }

  /** The final read of one namespace on its owner, against every key's client history. */
  /** `kvs`: the namespace's own keys as its owner holds them (those of namespaces nested in it are theirs). */
  checkFinal(prefix: string, kvs: readonly KeyValue[], cell: string, nested: readonly string[] = []): void {
    const held = new Map(kvs.map((kv) => [kv.key, fromUtf8(kv.value)]));
    for (const key of [...this.keys.keys()].filter((k) => isOwnKey(prefix, nested, k)).sort()) {
      this.judgeFound(key, held.get(key) ?? null, `the final read on ${cell}`);
    }
  }
}
