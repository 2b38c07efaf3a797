// The simulated network between members. Each directed link has its own base delay and keeps
// FIFO order unless a message is picked for reordering; loss and duplication are per message.
// A partition is a set of blocked directed links, so asymmetric partitions are ordinary ones.
import { assert } from '../base/assert.js';
import type { Random } from '../base/random.js';
import { chance, randomInt } from '../base/random.js';
import type { MemberId } from '../raft/index.js';

export interface LinkFaults {
  lossRate: number;
  duplicateRate: number;
  reorderRate: number;
  /** Probability of a long-tail delay (0 or absent: never drawn, so no random draw is spent). */
  tailRate?: number;
  tailMsMax?: number;
}

interface Link {
  readonly baseDelayMs: number;
  lastDeliveryMs: number;
}

const memberIdsMax = 1 << 16;

export class SimNetwork {
  private readonly links = new Map<number, Link>();
  private readonly blocked = new Set<number>();
  /**
   * Members cut off from every peer by a leader isolation (scenario.leaderIsolation): kept apart
   * from the partitions, so the nemesis healing its own partition does not end an isolation early.
   */
  private readonly isolated = new Set<MemberId>();

  constructor(
    private readonly random: Random,
    private readonly delayMsMin: number,
    private readonly delayMsMax: number,
    readonly faults: LinkFaults,
  ) {
    assert(delayMsMin >= 1 && delayMsMin <= delayMsMax, 'network delays are at least 1 ms');
  }

  /**
   * When (if ever) copies of a message sent now from `from` to `to` arrive: [] when it is lost,
   * two times when it is duplicated.
   */
  route(nowMs: number, from: MemberId, to: MemberId): number[] {
    if (this.isBlocked(from, to)) return [];
    if (chance(this.random, this.faults.lossRate)) return [];
    const link = this.link(from, to);
    const copies = chance(this.random, this.faults.duplicateRate) ? 2 : 1;
    const times: number[] = [];
    for (let copy = 0; copy < copies; copy++) {
      const jitterMs = randomInt(this.random, 0, Math.max(1, link.baseDelayMs >> 1));
      let atMs = nowMs + link.baseDelayMs + jitterMs;
      const tailRate = this.faults.tailRate ?? 0;
      if (tailRate > 0 && chance(this.random, tailRate)) {
        atMs += randomInt(this.random, 1, Math.max(1, this.faults.tailMsMax ?? 1));
      }
      if (chance(this.random, this.faults.reorderRate)) {
        // Overtaken by later traffic: deliberately out of FIFO order.
        atMs += randomInt(this.random, 1, this.delayMsMax * 4);
      } else {
        atMs = Math.max(atMs, link.lastDeliveryMs);
        link.lastDeliveryMs = atMs;
      }
      times.push(atMs);
    }
    return times;
  }

  isBlocked(from: MemberId, to: MemberId): boolean {
    if (from !== to && (this.isolated.has(from) || this.isolated.has(to))) return true;
    return this.blocked.has(linkKey(from, to));
  }

  /** Cut `member` off from every peer (clients still reach it) until rejoin or healAll. */
  isolate(member: MemberId): void {
    this.isolated.add(member);
  }

  rejoin(member: MemberId): void {
    this.isolated.delete(member);
  }

  isolatedCount(): number {
    return this.isolated.size;
  }

  block(from: MemberId, to: MemberId): void {
    if (from !== to) this.blocked.add(linkKey(from, to));
  }

  /** Ends the partitions (the nemesis' own); a leader isolation ends on its own schedule. */
  heal(): void {
    this.blocked.clear();
  }

  /** Ends every partition and isolation (the end of the fault phase). */
  healAll(): void {
    this.blocked.clear();
    this.isolated.clear();
  }

  blockedCount(): number {
    return this.blocked.size;
  }

  private link(from: MemberId, to: MemberId): Link {
    const key = linkKey(from, to);
    let link = this.links.get(key);
    if (link === undefined) {
      link = {
        baseDelayMs: randomInt(this.random, this.delayMsMin, this.delayMsMax),
        lastDeliveryMs: 0,
      };
      this.links.set(key, link);
    }
    return link;
  }
}

function linkKey(from: MemberId, to: MemberId): number {
  assert(
    from > 0 && from < memberIdsMax && to > 0 && to < memberIdsMax,
    'member ids fit a link key',
  );
  return from * memberIdsMax + to;
}
