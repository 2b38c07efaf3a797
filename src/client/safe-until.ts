// The arithmetic of "until when may this process act as the lease's owner". The server promises
// the lease for the granted TTL counted from when it *received* the renewal, which is no earlier
// than when we *sent* it; so sendTime + TTL is a point the server's deadline cannot precede
// (before clock-rate differences), however long the answer took to come back. The safety margin
// covers clock-rate drift between the two machines and the time owner-only work needs to stop.
// Times are local monotonic milliseconds; the wall clock may jump and is never used.

export class SafeUntil {
  /** Monotonic ms until which ownership is certain; -Infinity before the first grant. */
  private untilMs = Number.NEGATIVE_INFINITY;

  constructor(readonly safetyMarginMs: number) {
    if (!(safetyMarginMs >= 0)) throw new RangeError('safetyMarginMs must be >= 0');
  }

  /**
   * A renewal sent at `sentAtMs` was acknowledged with a TTL of `grantedTtlMs`.
   * Returns the (possibly unchanged) safeUntil. An old acknowledgement that arrives late never
   * moves safeUntil backwards, and one that arrives after safeUntil passed cannot revive it:
   * the caller decides loss first (see Session), and a lost session stays lost.
   */
  acknowledge(sentAtMs: number, grantedTtlMs: number): number {
    const candidateMs = sentAtMs + grantedTtlMs - this.safetyMarginMs;
    if (candidateMs > this.untilMs) this.untilMs = candidateMs;
    return this.untilMs;
  }

  get valueMs(): number {
    return this.untilMs;
  }

  isSafe(nowMs: number): boolean {
    return nowMs < this.untilMs;
  }

  remainingMs(nowMs: number): number {
    return Math.max(0, this.untilMs - nowMs);
  }
}

/** The default margin: a tenth of the TTL, at least 500 ms, but never over half the TTL. */
export function defaultSafetyMarginMs(ttlMs: number): number {
  return Math.min(ttlMs / 2, Math.max(500, ttlMs / 10));
}

/**
 * When to send the next renewal: a third of the TTL after the last acknowledged send, less up to a
 * fifth of that at random (`random` in [0, 1)). Sessions a leader answered together (one
 * leadership round releases every keepalive that waited on it) would otherwise renew together
 * from then on: at 1M sessions such herds of hundreds of frames held puts behind one long turn of
 * the leader's event loop (#31). Never later than a third: two renewals still fit in a TTL.
 */
export function renewalDelayMs(ttlMs: number, random = 0): number {
  return Math.max(200, Math.floor((ttlMs / 3) * (1 - 0.2 * random)));
}
