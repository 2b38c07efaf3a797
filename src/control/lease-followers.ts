// The control leader's lease followers (lease-follower.ts), one per moved namespace: the mover adds
// the leases it imports; every half second the node runs a round of each. They live in the
// leader's memory only: a new leader follows again what the map's released moves left on their
// destinations (their keys' leases, read there), and a member that stops leading forgets them.
import type { ImportLease } from '../base/namespace-import.js';
import { httpCellCalls } from './cell-calls.js';
import { nestedIn, type CellMap, type MapCell } from './cell-map.js';
import type { ControlService } from './control-service.js';
import { LeaseFollower, type FollowerCalls, type FollowerClock } from './lease-follower.js';
import { latestMove, type MoveRecord } from './moves.js';

export class LeaseFollowers {
  /** By namespace: its latest move's follower (a namespace moved again gets a new one). */
  private readonly followers = new Map<string, LeaseFollower>();
  /** Released moves whose leases this leader follows already (or found none to follow). */
  private readonly followedMoves = new Set<number>();

  constructor(
    private readonly control: Pick<ControlService, 'localMap'>,
    private readonly clock: FollowerClock,
    private readonly log: { warn(message: string): void },
    private readonly calls: FollowerCalls = httpCellCalls,
  ) {}

  /** Leases of `prefix`'s keys just imported on `destination`, with what they had left on `source` when read (at `readAtMs` or later). */
  follow(prefix: string, source: MapCell, destination: MapCell, leases: Iterable<ImportLease>, readAtMs: number): void {
    let follower = this.followers.get(prefix);
    if (follower === undefined || follower.source.id !== source.id || follower.destination.id !== destination.id) {
      follower = new LeaseFollower(prefix, source, destination, this.clock, this.calls);
      this.followers.set(prefix, follower);
    }
    follower.follow(leases, readAtMs);
  }

  /** The move of `prefix` to `destinationId` was aborted: its keys are not there any more. */
  forget(prefix: string, destinationId: string): void {
    if (this.followers.get(prefix)?.destination.id === destinationId) this.followers.delete(prefix);
  }

  /** Leases followed (all namespaces). */
  get size(): number {
    let count = 0;
    for (const follower of this.followers.values()) count += follower.size;
    return count;
  }

  /** One round of every follower while this member leads the control cell; else they are dropped. */
  async round(leading: boolean): Promise<void> {
    if (!leading) {
      this.followers.clear();
      this.followedMoves.clear();
      return;
    }
    await this.followReleasedMoves(this.control.localMap());
    await Promise.all([...this.followers.values()].map((follower) => follower.round().catch((error: unknown) => {
      this.log.warn(`leases of ${follower.prefix} (${follower.source.id} -> ${follower.destination.id}): ${(error as Error).message}`);
    })));
    for (const [prefix, follower] of this.followers) if (follower.size === 0) this.followers.delete(prefix);
  }

  /** A released move this leader did not drive: its leases as the destination holds them, followed from now on. */
  private async followReleasedMoves(map: CellMap): Promise<void> {
    for (const prefix of new Set((map.moves ?? []).map((m) => m.prefix))) {
      const move = latestMove(map, prefix);
      if (move === undefined || move.phase !== 'released' || this.followedMoves.has(move.id)) continue;
      this.followedMoves.add(move.id);
      if (this.followers.get(prefix)?.destination.id === move.to) continue;
      try {
        await this.followFromDestination(map, move);
      } catch (error) {
        this.followedMoves.delete(move.id); // tried again next round
        this.log.warn(`move ${move.id} of ${prefix}: its leases could not be read on ${move.to}: ${(error as Error).message}`);
      }
    }
  }

  private async followFromDestination(map: CellMap, move: MoveRecord): Promise<void> {
    const source = map.cells.find((c) => c.id === move.from);
    const destination = map.cells.find((c) => c.id === move.to);
    if (source === undefined || destination === undefined) return;
    const read = await this.calls.readNamespace(destination, move.prefix, nestedIn(map, move.prefix));
    const ids = [...new Set(read.kvs.map((kv) => kv.lease).filter((id) => id !== 0))];
    const readAtMs = this.clock.nowMs();
    const leases = (await Promise.all(ids.map((id) => this.calls.readLease(destination, id)))).filter((lease) => lease !== null);
    if (leases.length > 0) this.follow(move.prefix, source, destination, leases, readAtMs);
  }
}
