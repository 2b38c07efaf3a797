// What lease holders rely on, checked as the run goes (issue 7):
// - a lease is never deleted before every promise made to its holder ran out: a grant or
//   renewal sent at time s and answered with TTL t promises the lease lives until s + t, so
//   its revocation may not be applied (on any replica) before then, and a holder that keeps
//   renewing in time never loses its lease;
// - an expired lease is revoked by exactly one log entry, which deletes every key attached to
//   it, and every replica applies that revocation at the same index with the same revision;
// - a keepalive answers lease_not_found only once every promise made for that lease ran out,
//   and only once its revocation applied (on the answering leader, so on some member): a client
//   told its lease is gone must not read the lease's keys afterwards (fault run seed 19105).
// Times are the simulated clock's (the members' monotonic clocks are that clock).

interface Promised {
  readonly untilMs: number;
  readonly sendMs: number;
  readonly what: string;
}

interface Revocation {
  readonly index: number;
  readonly revision: number;
  readonly deleted: number;
  readonly member: number;
  /** When the first replica applied it: from then on a client can see the keys gone. */
  readonly firstMs: number;
}

export class LeaseChecker {
  private readonly promised = new Map<number, Promised>();
  private readonly revoked = new Map<number, Revocation>();
  private readonly attached = new Map<number, Set<string>>();

  constructor(private readonly report: (invariant: string, detail: string) => void) {}

  get revokedCount(): number {
    return this.revoked.size;
  }

  isRevoked(id: number): boolean {
    return this.revoked.has(id);
  }

  /** The revision at which lease `id` was revoked, if it was (the lock checker's dead-lease rule). */
  revokedAtRevision(id: number): number | undefined {
    return this.revoked.get(id)?.revision;
  }

  /** The holder heard an answer to a grant or renewal sent at `sendMs`: alive for `ttlMs` more. */
  onPromise(id: number, sendMs: number, ttlMs: number, nowMs: number, what: string): void {
    const untilMs = sendMs + ttlMs;
    const revocation = this.revoked.get(id);
    if (revocation !== undefined && revocation.firstMs < untilMs) {
      this.report(
        'lease never expires early',
        `lease ${id}: a ${what} sent at ${sendMs} ms was answered at ${nowMs} ms with TTL ${ttlMs} ms ` +
          `(alive until ${untilMs} ms), but its revocation was applied at ${revocation.firstMs} ms ` +
          `(index ${revocation.index} on member ${revocation.member})`,
      );
    }
    const previous = this.promised.get(id);
    if (previous === undefined || untilMs > previous.untilMs) this.promised.set(id, { untilMs, sendMs, what });
  }

  /** A put attaching `key` to lease `id` was acknowledged. */
  onKeyAttached(id: number, key: string): void {
    let keys = this.attached.get(id);
    if (keys === undefined) {
      keys = new Set();
      this.attached.set(id, keys);
    }
    keys.add(key);
  }

  /**
   * A keepalive answered lease_not_found for `id` at `nowMs`. The leader decides an expiry only
   * once the lease's deadline passed, and every promise ends by then: an answer while a promise
   * still runs tells a holder that renewed in time that its lease is gone.
   */
  onNotFound(id: number, sendMs: number, nowMs: number): void {
    if (!this.revoked.has(id)) {
      this.report(
        'lease reported gone only once revoked',
        `a keepalive sent at ${sendMs} ms was answered lease_not_found for lease ${id} at ${nowMs} ms, ` +
          `but no member had applied its revocation: its keys were still there`,
      );
    }
    const promise = this.promised.get(id);
    if (promise === undefined || nowMs >= promise.untilMs) return;
    this.report(
      'lease never expires early',
      `a keepalive sent at ${sendMs} ms was answered lease_not_found for lease ${id} at ${nowMs} ms, ` +
        `but a ${promise.what} sent at ${promise.sendMs} ms promised it until ${promise.untilMs} ms`,
    );
  }

  /** Member `member` applied a revocation of lease `id` (not a duplicate, not refused). */
  onRevokeApplied(member: number, index: number, id: number, revision: number, deleted: number, nowMs: number): void {
    const known = this.revoked.get(id);
    if (known === undefined) {
      this.revoked.set(id, { index, revision, deleted, member, firstMs: nowMs });
      const promise = this.promised.get(id);
      if (promise !== undefined && nowMs < promise.untilMs) {
        this.report(
          'lease never expires early',
          `lease ${id} was revoked at ${nowMs} ms (index ${index} on member ${member}), but a ` +
            `${promise.what} sent at ${promise.sendMs} ms promised it until ${promise.untilMs} ms`,
        );
      }
      const keys = this.attached.get(id)?.size ?? 0;
      if (deleted < keys) {
        this.report(
          'expiry deletes attached keys',
          `the revocation of lease ${id} deleted ${deleted} keys; ${keys} were attached`,
        );
      }
      return;
    }
    if (known.index !== index) {
      this.report(
        'lease revoked once',
        `lease ${id} was revoked at index ${known.index} (member ${known.member}) and again at ` +
          `index ${index} (member ${member})`,
      );
    } else if (known.revision !== revision || known.deleted !== deleted) {
      this.report(
        'expiry revision same on all replicas',
        `lease ${id} at index ${index}: member ${known.member} revoked it at revision ` +
          `${known.revision} deleting ${known.deleted} keys, member ${member} at revision ` +
          `${revision} deleting ${deleted}`,
      );
    }
  }
}
