// One priority level of fair admission (issue #28), after Kubernetes' API Priority and Fairness:
// a level serves at most `seats` cost units at once; past that, requests wait in a bounded set of
// queues that every flow (a tenant) shares through shuffle sharding (a flow's hash deals it
// `handSize` of the queues and it joins the shortest of them, so a flooding flow fills only its
// own hand and a quiet flow almost surely keeps a queue of its own). Queues are served by
// start-time fair queueing: each waiting request carries a virtual start tag (the later of the
// level's virtual time and its queue's last finish tag) and the smallest tag goes next, so every
// busy queue gets the same work per round whatever its flow sends; a queue that was idle starts
// at the current virtual time (no banked credit). A head that needs more seats than are free
// waits for them and nothing passes it (a wide request is never starved by narrow ones). A
// request whose deadline passes while it waits is dropped before it is done. No clock of its own:
// time is injected, so the unit tests drive it exactly.
import { assert } from './assert.js';

export interface FairQueueOptions {
  /** Cost units served at once (a small request costs 1; a list costs more). */
  readonly seats: number;
  /** Queues shared by all flows. */
  readonly queues: number;
  /** Queues dealt to each flow (its largest share of the waiting room). */
  readonly handSize: number;
  /** Requests waiting in one queue; a flow whose whole hand is full is refused at once. */
  readonly queueLengthMax: number;
}

/** A request waiting for seats: told once, admitted (with its release) or dropped. */
export interface FairRequest {
  readonly flow: string;
  /** Seats it holds while served; clamped to the level's seats. */
  readonly cost: number;
  /** Past this (injected ms) it is dropped instead of served. */
  readonly deadlineMs: number;
  admitted(release: () => void): void;
  dropped(waitedMs: number): void;
}

interface Waiting {
  readonly request: FairRequest;
  readonly cost: number;
  readonly start: number;
  readonly seq: number;
  readonly queuedAtMs: number;
}

export class FairQueue {
  private readonly queues: Waiting[][];
  /** Per queue, the finish tag of its last request (virtual time). */
  private readonly lastFinish: number[];
  private virtualTime = 0;
  private seatsInUse = 0;
  private waitingCount = 0;
  private seq = 0;
  private readonly hands = new Map<string, readonly number[]>();

  constructor(
    readonly options: FairQueueOptions,
    private readonly nowMs: () => number,
  ) {
    assert(options.seats >= 1 && options.queues >= 1 && options.queueLengthMax >= 1, 'a fair queue has seats, queues and room');
    assert(options.handSize >= 1 && options.handSize <= options.queues, 'a hand is 1..queues queues');
    this.queues = Array.from({ length: options.queues }, () => []);
    this.lastFinish = new Array<number>(options.queues).fill(0);
  }

  /** Seats held by requests being served now. */
  get inUse(): number {
    return this.seatsInUse;
  }

  /** Requests waiting now. */
  get waiting(): number {
    return this.waitingCount;
  }

  /** The cost a request of `cost` is charged: at least 1, at most the level's seats. */
  clamp(cost: number): number {
    return Math.min(this.options.seats, Math.max(1, Math.ceil(cost)));
  }

  /**
   * Admits at once when nothing waits and the seats are free: the release, else null (the caller
   * then offers it to wait). The common, unloaded case allocates one closure.
   */
  tryAdmit(cost: number): (() => void) | null {
    const charged = this.clamp(cost);
    if (this.waitingCount > 0 || this.seatsInUse + charged > this.options.seats) return null;
    this.seatsInUse += charged;
    return this.releaser(charged);
  }

  /** Whether a request of `flow` would be refused now (its hand's queues all full): looks only. */
  full(flow: string): boolean {
    const queue = this.queues[this.shortestInHand(flow)] as Waiting[];
    return queue.length >= this.options.queueLengthMax;
  }

  /**
   * Queues `request` (or admits it at once if it can be): false when its flow's queues are all
   * full (refused; nothing was taken). `admitted` may be called before this returns.
   */
  offer(request: FairRequest): boolean {
    const release = this.tryAdmit(request.cost);
    if (release !== null) {
      request.admitted(release);
      return true;
    }
    const index = this.shortestInHand(request.flow);
    const queue = this.queues[index] as Waiting[];
    if (queue.length >= this.options.queueLengthMax) return false;
    const cost = this.clamp(request.cost);
    const start = Math.max(this.virtualTime, this.lastFinish[index] as number);
    this.lastFinish[index] = start + cost;
    queue.push({ request, cost, start, seq: this.seq++, queuedAtMs: this.nowMs() });
    this.waitingCount++;
    this.dispatch();
    return true;
  }

  /** Drops every waiting request past its deadline (the edge calls this on a timer), then serves. */
  expire(): void {
    if (this.waitingCount === 0) return;
    const now = this.nowMs();
    for (const queue of this.queues) {
      for (let i = 0; i < queue.length; ) {
        const waiting = queue[i] as Waiting;
        if (waiting.request.deadlineMs > now) {
          i++;
          continue;
        }
        queue.splice(i, 1);
        this.waitingCount--;
        waiting.request.dropped(now - waiting.queuedAtMs);
      }
    }
    this.dispatch();
  }

  /** Serves waiting heads in start-tag order while their seats are free. */
  private dispatch(): void {
    while (this.waitingCount > 0) {
      const index = this.nextQueue();
      const queue = this.queues[index] as Waiting[];
      const head = queue[0] as Waiting;
      const now = this.nowMs();
      if (head.request.deadlineMs <= now) {
        queue.shift();
        this.waitingCount--;
        head.request.dropped(now - head.queuedAtMs);
        continue;
      }
      if (this.seatsInUse + head.cost > this.options.seats) return;
      queue.shift();
      this.waitingCount--;
      this.seatsInUse += head.cost;
      this.virtualTime = Math.max(this.virtualTime, head.start);
      head.request.admitted(this.releaser(head.cost));
    }
  }

  /** The non-empty queue whose head has the smallest start tag (ties: the earlier arrival). */
  private nextQueue(): number {
    let best = -1;
    let bestHead: Waiting | undefined;
    for (let i = 0; i < this.queues.length; i++) {
      const head = (this.queues[i] as Waiting[])[0];
      if (head === undefined) continue;
      if (bestHead === undefined || head.start < bestHead.start || (head.start === bestHead.start && head.seq < bestHead.seq)) {
        best = i;
        bestHead = head;
      }
    }
    assert(best >= 0, 'a waiting request is in some queue');
    return best;
  }

  private shortestInHand(flow: string): number {
    const hand = this.handOf(flow);
    let best = hand[0] as number;
    for (const index of hand) if ((this.queues[index] as Waiting[]).length < (this.queues[best] as Waiting[]).length) best = index;
    return best;
  }

  /** The flow's queues: dealt from its hash without repeats (the same flow, the same hand). */
  handOf(flow: string): readonly number[] {
    let hand = this.hands.get(flow);
    if (hand !== undefined) return hand;
    const dealt: number[] = [];
    let state = fnv1a(flow);
    const deck = Array.from({ length: this.options.queues }, (_, i) => i);
    for (let i = 0; i < this.options.handSize; i++) {
      state = xorshift(state);
      const pick = i + (state % (deck.length - i));
      [deck[i], deck[pick]] = [deck[pick] as number, deck[i] as number];
      dealt.push(deck[i] as number);
    }
    hand = dealt;
    // Flows are tenants (at most 1,000) and the no-tenant flow: the cache stays small.
    if (this.hands.size >= 4096) this.hands.clear();
    this.hands.set(flow, hand);
    return hand;
  }

  private releaser(cost: number): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.seatsInUse -= cost;
      assert(this.seatsInUse >= 0, 'seats released no more than taken');
      this.dispatch();
    };
  }
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash || 1;
}

function xorshift(state: number): number {
  let x = state;
  x ^= x << 13;
  x >>>= 0;
  x ^= x >>> 17;
  x ^= x << 5;
  return x >>> 0 || 1;
}
