// What lock holders rely on, checked as the simulated run goes (issue 9):
// - at every moment at most one contender holds the lock with an unexpired lease: a holder's
//   tenure runs from the acknowledgement of its grant until it sends its release or its lease's
//   last promise runs out (the send time of the last answered grant/renewal + TTL), whichever
//   comes first; no two tenures overlap;
// - fencing tokens of successive holders strictly increase (grant order = queue order: FIFO
//   among waiters that stay alive);
// - a grant never goes to a dead lease: a lease revoked at revision V owns no grant at or after V;
// - no waiter sleeps forever: every acquire ends within its wait plus a bound, and the member
//   answers it soon after its wait ends (granted, lock_held or timeout).
// Times are the simulated clock's.

interface Tenure {
  readonly contender: number;
  readonly token: number;
  readonly lease: number;
  readonly revision: number;
  readonly startMs: number;
  /** Min(release sent, the lease's promise); grows with renewals until the tenure ends. */
  endMs: number;
  open: boolean;
}

export class LockChecker {
  private readonly tenures: Tenure[] = [];
  /** The last grant that gave its holder a tenure. */
  private lastHeld: Tenure | null = null;

  constructor(private readonly report: (invariant: string, detail: string) => void) {}

  get grants(): number {
    return this.tenures.length;
  }

  /** A grant was acknowledged to `contender` at `nowMs`; its lease is promised until `leaseUntilMs`. */
  onGrant(grant: { contender: number; token: number; lease: number; revision: number }, nowMs: number, leaseUntilMs: number): Tenure {
    const tenure: Tenure = { ...grant, startMs: nowMs, endMs: Math.max(nowMs, leaseUntilMs), open: leaseUntilMs > nowMs };
    this.tenures.push(tenure);
    // A grant answered after the holder's lease promise ran out (a late answer through a
    // partition) gives no tenure: the holder cannot act on it, so it holds nothing.
    if (!tenure.open) return tenure;
    for (const other of this.tenures) {
      if (other !== tenure && other.endMs > nowMs) {
        this.report(
          'one lock holder at a time',
          `contender ${grant.contender} was granted token ${grant.token} at ${nowMs} ms while contender ` +
            `${other.contender} (token ${other.token}, granted at ${other.startMs} ms) still held it until ${other.endMs} ms`,
        );
      }
    }
    const last = this.lastHeld;
    if (last !== null && grant.token <= last.token) {
      this.report(
        'fencing tokens increase',
        `token ${grant.token} granted to contender ${grant.contender} at ${nowMs} ms after token ${last.token} (contender ${last.contender})`,
      );
    }
    this.lastHeld = tenure;
    return tenure;
  }

  /** The holder's lease was promised further (a renewal answered while it holds). */
  onPromise(tenure: Tenure, untilMs: number): void {
    if (tenure.open && untilMs > tenure.endMs) tenure.endMs = untilMs;
  }

  /** The holder stops holding at `nowMs` (it sent its release, or it learned its lease is gone). */
  onEnd(tenure: Tenure, nowMs: number): void {
    if (!tenure.open) return;
    tenure.open = false;
    tenure.endMs = Math.min(tenure.endMs, nowMs);
  }

  /** The holder's lease promise ran out while it held (a pause, a cut network): the tenure ends. */
  onLeaseRanOut(tenure: Tenure): void {
    tenure.open = false;
  }

  /** Every grant against the revisions at which leases were revoked. */
  checkLeases(revokedAt: (lease: number) => number | undefined): void {
    for (const tenure of this.tenures) {
      const revoked = revokedAt(tenure.lease);
      if (revoked !== undefined && revoked <= tenure.revision) {
        this.report(
          'no grant to a dead lease',
          `contender ${tenure.contender} was granted token ${tenure.token} at revision ${tenure.revision}, ` +
            `but its lease ${tenure.lease} was revoked at revision ${revoked}`,
        );
      }
    }
  }

  /** An acquire answered (by its member, not the client's timeout) long after its wait ended. */
  onLateAnswer(contender: number, sinceMs: number, nowMs: number, waitMs: number): void {
    this.report(
      'an acquire answers when its wait ends',
      `contender ${contender}'s acquire sent at ${sinceMs} ms (waitMs ${waitMs}) was answered only at ${nowMs} ms`,
    );
  }

  /** An acquire that never ended. */
  onStuck(contender: number, sinceMs: number, nowMs: number, waitMs: number): void {
    this.report(
      'no waiter sleeps forever',
      `contender ${contender}'s acquire sent at ${sinceMs} ms (waitMs ${waitMs}) had no answer at ${nowMs} ms`,
    );
  }
}

export type { Tenure };
