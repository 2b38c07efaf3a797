// New sessions per second on one node (issue #28, session storms): after a network recovery or a
// leader change thousands of clients reconnect at once, and each new session is work (a stream's
// WebSocket handshake, a lease grant's log entry). The gate admits at most `perSecond` opening
// requests a second (a token bucket holding one second's worth) and refuses the rest with 429
// overloaded and staggered guidance: it keeps a calendar of the seconds ahead and tells each
// refused client the first second that still has room for it, so N clients refused together are
// told to come back spread over the N / perSecond seconds the rate needs to admit them, instead of
// all after the same delay (which only moves the storm). The client adds its own jitter within the
// second. A lease grant, a batch grant and a stream open each count one: the gate bounds opening
// requests (a batch is one log entry, which is why it exists). Time is injected.
import { assert } from './assert.js';
import { OverloadedError } from './errors.js';

export interface SessionGateOptions {
  /** Opening requests admitted per second on this node. */
  readonly perSecond: number;
  /** The furthest guidance given (seconds): past it, every refusal is told this. */
  readonly windowSecondsMax: number;
}

export const defaultSessionGateOptions: SessionGateOptions = { perSecond: 5_000, windowSecondsMax: 60 };

export type SessionKind = 'lease_grant' | 'stream_open';

export class SessionGate {
  private tokens: number;
  private atMs: number;
  /** Clients told to come back in each absolute second (ms / 1000, floored). */
  private readonly calendar = new Map<number, number>();
  private admittedCount = 0;
  private refusedCount = 0;

  constructor(
    readonly options: SessionGateOptions,
    private readonly nowMs: () => number,
  ) {
    assert(options.perSecond >= 1 && options.windowSecondsMax >= 1, 'a session gate admits something');
    this.tokens = options.perSecond;
    this.atMs = nowMs();
  }

  /** Admits one opening request of `kind`, or throws 429 overloaded with its Retry-After. */
  admit(kind: SessionKind): void {
    const now = this.nowMs();
    const rate = this.options.perSecond;
    this.tokens = Math.min(rate, this.tokens + (Math.max(0, now - this.atMs) * rate) / 1000);
    this.atMs = Math.max(this.atMs, now);
    if (this.tokens >= 1) {
      this.tokens -= 1;
      this.admittedCount++;
      return;
    }
    this.refusedCount++;
    const seconds = this.guidance(now);
    const error = new OverloadedError(
      `too many new sessions on this node (at most ${rate} a second); retry after ${seconds} s`,
      { reason: 'session_rate', kind, perSecond: rate, retryAfterSeconds: seconds },
    );
    error.retryAfterSeconds = seconds;
    throw error;
  }

  /** Opening requests admitted and refused here since start (for metrics). */
  counts(): { admitted: number; refused: number } {
    return { admitted: this.admittedCount, refused: this.refusedCount };
  }

  /** The first second ahead with room left in the calendar (it is booked); forgets past seconds. */
  private guidance(now: number): number {
    const second = Math.floor(now / 1000);
    for (const booked of this.calendar.keys()) if (booked <= second) this.calendar.delete(booked);
    // Room for a little less than the rate: clients arriving unguided in that second get the rest.
    const room = Math.max(1, Math.floor(this.options.perSecond * 0.9));
    for (let ahead = 1; ahead <= this.options.windowSecondsMax; ahead++) {
      const booked = this.calendar.get(second + ahead) ?? 0;
      if (booked < room) {
        this.calendar.set(second + ahead, booked + 1);
        return ahead;
      }
    }
    return this.options.windowSecondsMax;
  }
}
