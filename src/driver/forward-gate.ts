// A follower's bound on the bytes of writes it has forwarded to the leader and not yet seen
// answered (limits.forwardedBytesMax: they share the peer stream with heartbeats and their
// answers), with a first-come queue in front of it. Refusing at once whatever does not fit made
// it unfair: a client backing off after a refusal came back to find the room taken by fresh
// requests, again and again (#31: one 100-put transaction of the 1M-key attach was refused 40
// times in a row, about a minute, while others passed). Queued, a write waits its turn for room:
// nothing overtakes it, and it leaves the queue sent, or refused after waiting `waitMsMax` (429,
// never sent), or with its proposal's end (timer, stop). The queue is bounded in bytes too.
import { assert } from '../base/assert.js';

interface Waiting {
  readonly key: string;
  readonly data: Uint8Array;
  readonly sinceMs: number;
}

export type ForwardAdmission = 'send' | 'queue' | 'full';

export class ForwardGate {
  /** Bytes forwarded and not answered yet. */
  private outstanding = 0;
  private readonly queue: Waiting[] = [];
  /** queue[head] is the oldest still waiting (entries before it were taken). */
  private head = 0;
  private readonly queuedKeys = new Set<string>();
  private queuedBytes = 0;

  constructor(
    private readonly bytesMax: number,
    private readonly waitMsMax: number,
  ) {
    assert(bytesMax > 0 && waitMsMax > 0, 'a forward gate has room and a wait bound');
  }

  get forwardedBytes(): number {
    return this.outstanding;
  }

  get waiting(): number {
    return this.queuedKeys.size;
  }

  /** `send` now (nothing queued ahead, and it fits or nothing is outstanding), `queue`, or `full`. */
  admit(bytes: number): ForwardAdmission {
    if (this.queuedKeys.size === 0 && this.fits(bytes)) return 'send';
    // A proposal larger than the bound waits for an empty stream, like one sent at once.
    return this.queuedBytes === 0 || this.queuedBytes + bytes <= this.bytesMax ? 'queue' : 'full';
  }

  sent(bytes: number): void {
    this.outstanding += bytes;
  }

  answered(bytes: number): void {
    this.outstanding -= bytes;
    assert(this.outstanding >= 0, 'forwarded bytes are counted once per proposal');
  }

  enqueue(key: string, data: Uint8Array, nowMs: number): void {
    assert(!this.queuedKeys.has(key), 'a proposal waits once');
    this.queue.push({ key, data, sinceMs: nowMs });
    this.queuedKeys.add(key);
    this.queuedBytes += data.byteLength;
  }

  /** A queued proposal that ended while waiting (its timer, a stop): it will not be sent. */
  drop(key: string): void {
    if (!this.queuedKeys.delete(key)) return;
    let at = this.head;
    while (at < this.queue.length && (this.queue[at] as Waiting).key !== key) at++;
    assert(at < this.queue.length, 'a queued key is in the queue');
    this.queuedBytes -= (this.queue[at] as Waiting).data.byteLength;
    this.queue.splice(at, 1);
    this.compact();
  }

  /** The oldest waiting proposal if it may be sent now (it is taken off the queue), else null. */
  next(): { key: string; data: Uint8Array } | null {
    const first = this.queue[this.head];
    if (first === undefined || !this.fits(first.data.byteLength)) return null;
    this.take();
    return first;
  }

  /** The oldest waiting proposal if it waited past the bound (taken off the queue), else null. */
  expired(nowMs: number): { key: string } | null {
    const first = this.queue[this.head];
    if (first === undefined || nowMs - first.sinceMs <= this.waitMsMax) return null;
    this.take();
    return first;
  }

  /** Every queued proposal, oldest first, taken off the queue (this member leads now, or stops). */
  drain(): { key: string; data: Uint8Array }[] {
    const all = this.queue.slice(this.head);
    this.queue.length = 0;
    this.head = 0;
    this.queuedKeys.clear();
    this.queuedBytes = 0;
    return all;
  }

  reset(): void {
    this.drain();
    this.outstanding = 0;
  }

  private fits(bytes: number): boolean {
    return this.outstanding === 0 || this.outstanding + bytes <= this.bytesMax;
  }

  private take(): void {
    const first = this.queue[this.head] as Waiting;
    this.head++;
    this.queuedKeys.delete(first.key);
    this.queuedBytes -= first.data.byteLength;
    this.compact();
  }

  private compact(): void {
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }
}
