// Leases across a namespace move (docs/design/cells.md, "Leases across a move"). A moved key keeps
// its lease id on the destination, where the import recreated the lease with the time it had left
// on the source. Its owner keeps renewing it where it always did (the source: leases name no key,
// and a session renews on the cell that granted it), so without help the destination's copy would
// run out and its keys be deleted while the owner renews in time. The follower carries those
// renewals over: every round it reads each followed lease's remaining TTL on the source's leader
// and, when the source's deadline moved past the one last carried (the owner renewed), sends it
// to the destination in an import of leases alone, which only raises the lease there
// (src/mvcc/import-keys.ts). The destination's deadline is then at least the source's (the
// remaining TTL counts from the read, the destination counts it from its apply, later). A lease
// nobody renews is raised by nobody and ends on the destination when it ends on the source.
import { assert } from '../base/assert.js';
import { encodeImportRecord, type ImportLease } from '../base/namespace-import.js';
import type { MapCell } from './cell-map.js';
import { httpCellCalls, type CellCalls } from './cell-calls.js';

/** Followed leases per move: past it, the rest are not followed (counted in `dropped`). */
export const followedLeasesMax = 1_000;
/** A source deadline less than this past the one carried is not worth a command on the destination. */
const renewedSlackMs = 100;
/** Source reads in flight per round. */
const readsInFlightMax = 16;

export interface FollowerClock {
  nowMs(): number;
}

/** The cells' calls a follower makes (HTTP in a node; injected by tests). */
export type FollowerCalls = Pick<CellCalls, 'readLease' | 'sendImport' | 'readNamespace'>;

export class LeaseFollower {
  /** Lease id -> its granted TTL and the source deadline (clock ms) last carried to the destination. */
  private readonly carriedDeadlines = new Map<number, { ttlMs: number; deadlineMs: number }>();
  private running = false;
  /** Leases not followed because of followedLeasesMax. */
  dropped = 0;
  /** Renewals carried to the destination so far (tests and logs). */
  carried = 0;

  constructor(
    readonly prefix: string,
    readonly source: MapCell,
    readonly destination: MapCell,
    private readonly clock: FollowerClock,
    private readonly calls: FollowerCalls = httpCellCalls,
  ) {
    assert(source.id !== destination.id, 'a follower carries renewals between two cells');
  }

  get size(): number {
    return this.carriedDeadlines.size;
  }

  /**
   * Leases just imported on the destination with what they had left on the source, read at
   * `readAtMs` or later. Their deadlines count from the read, not from now: the destination counts
   * from its apply, which may be seconds before the import's answer reached here, so a deadline
   * from now would wait out the owner's next renewals before carrying one (the destination's
   * copy then ran out first: move-leases.test, a loaded machine, each fsync 1.5 s).
   */
  follow(leases: Iterable<ImportLease>, readAtMs: number): void {
    for (const lease of leases) {
      assert(lease.remainingMs <= lease.ttlMs, 'a followed lease has its remaining TTL within its TTL');
      const known = this.carriedDeadlines.get(lease.id);
      if (known === undefined && this.carriedDeadlines.size >= followedLeasesMax) {
        this.dropped++;
        continue;
      }
      this.carriedDeadlines.set(lease.id, { ttlMs: lease.ttlMs, deadlineMs: Math.max(known?.deadlineMs ?? 0, readAtMs + lease.remainingMs) });
    }
  }

  /** One round (skipped while the previous one runs): read on the source, carry renewals over. */
  async round(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const renewed = await this.renewedOnSource([...this.carriedDeadlines.keys()]);
      if (renewed.length > 0) await this.carry(renewed);
    } finally {
      this.running = false;
    }
  }

  /** The leases whose source deadline moved past the one carried; leases gone on the source are let go. */
  private async renewedOnSource(ids: readonly number[]): Promise<{ lease: ImportLease; deadlineMs: number }[]> {
    const renewed: { lease: ImportLease; deadlineMs: number }[] = [];
    for (let i = 0; i < ids.length; i += readsInFlightMax) {
      await Promise.all(ids.slice(i, i + readsInFlightMax).map(async (id) => {
        const readAtMs = this.clock.nowMs();
        const lease = await this.calls.readLease(this.source, id);
        // Ended on the source (expired or revoked): the destination's copy ends at the deadline carried last.
        if (lease === null) {
          this.carriedDeadlines.delete(id);
          return;
        }
        const deadlineMs = readAtMs + lease.remainingMs;
        const carried = this.carriedDeadlines.get(id);
        if (carried !== undefined && deadlineMs > carried.deadlineMs + renewedSlackMs) renewed.push({ lease, deadlineMs });
      }));
    }
    return renewed;
  }

  /** One import of leases alone on the destination: it raises each to what the source gave it. */
  private async carry(renewed: readonly { lease: ImportLease; deadlineMs: number }[]): Promise<void> {
    // With its origin: the destination raises only its copy of this lease, never another cell's lease of the same id.
    const leases = renewed.map((r) => ({ id: r.lease.id, ttlMs: r.lease.ttlMs, remainingMs: Math.min(r.lease.remainingMs, r.lease.ttlMs),
      ...(r.lease.origin === undefined ? {} : { origin: r.lease.origin }) }));
    await this.calls.sendImport(this.destination, encodeImportRecord({ prefix: this.prefix, clear: false, floor: 0, puts: [], deletes: [], leases, destination: this.destination.id }));
    for (const { lease, deadlineMs } of renewed) {
      const carried = this.carriedDeadlines.get(lease.id);
      if (carried !== undefined) this.carriedDeadlines.set(lease.id, { ...carried, deadlineMs: Math.max(carried.deadlineMs, deadlineMs) });
    }
    this.carried += renewed.length;
  }
}
