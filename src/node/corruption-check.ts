// The leader's periodic corruption check (etcd's --experimental-corrupt-check-time): every
// `everyMs` it hashes the key space at its revision R (src/mvcc/kv-hash.ts) and asks each other
// member for its hash at R (GET /v1/maintenance/hashkv). Members that have applied R with the same
// compact revision must agree; a member that differs from the majority hash is raised CORRUPT in
// this node's alarm table (etcdctl alarm list on the leader shows it), the leader itself included.
// A member not at R yet, compacted past it, or not answering is left out of that round. Off by
// default (--corrupt-check-ms 0): each round reads the whole key space on every member.
import { alarmType, type AlarmTable } from '../api/alarms.js';
import { hashKvPaced } from '../api/hash-kv.js';
import type { HashableStore } from '../mvcc/index.js';

export interface CorruptionCheckDeps {
  readonly everyMs: number;
  readonly memberId: number;
  isLeader(): boolean;
  /** Every member with its client URL ('' when unknown: left out). */
  members(): readonly { readonly id: number; readonly clientUrl: string }[];
  readonly store: HashableStore;
  readonly alarms: AlarmTable;
  readonly log: { warn(message: string): void };
}

const answerTimeoutMs = 10_000;

export class CorruptionCheck {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(private readonly deps: CorruptionCheckDeps) {}

  start(): void {
    if (this.deps.everyMs <= 0) return;
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.checkOnce().catch((error: unknown) => this.deps.log.warn(`corruption check failed: ${(error as Error).message}`))
        .finally(() => this.schedule());
    }, this.deps.everyMs);
    this.timer.unref();
  }

  /** One round; resolves with the members raised CORRUPT in it. */
  async checkOnce(): Promise<number[]> {
    if (!this.deps.isLeader()) return [];
    const mine = await hashKvPaced(this.deps.store, 0);
    const hashes = new Map<number, number>([[this.deps.memberId, mine.hash]]);
    const others = this.deps.members().filter((m) => m.id !== this.deps.memberId && m.clientUrl !== '');
    await Promise.all(others.map(async (member) => {
      const theirs = await hashOf(member.clientUrl, mine.revision);
      if (theirs !== null && theirs.revision === mine.revision && theirs.compactRevision === mine.compactRevision) {
        hashes.set(member.id, theirs.hash);
      }
    }));
    const counts = new Map<number, number>();
    for (const hash of hashes.values()) counts.set(hash, (counts.get(hash) ?? 0) + 1);
    const [majority, votes] = [...counts.entries()].sort((a, b) => b[1] - a[1])[0] as [number, number];
    if (counts.size === 1) return [];
    if (votes * 2 <= hashes.size) {
      this.deps.log.warn(`corruption check: no majority among ${hashes.size} members' hashes at revision ${mine.revision}`);
      return [];
    }
    const corrupt = [...hashes.entries()].filter(([, hash]) => hash !== majority).map(([id]) => id);
    for (const id of corrupt) {
      this.deps.log.warn(`corruption check: member ${id}'s key space at revision ${mine.revision} differs from ` +
        `${votes} of ${hashes.size} members': raising CORRUPT`);
      this.deps.alarms.activate(String(id), alarmType.corrupt);
    }
    return corrupt;
  }
}

async function hashOf(clientUrl: string, revision: number): Promise<{ hash: number; revision: number; compactRevision: number } | null> {
  try {
    const res = await fetch(`${clientUrl}/v1/maintenance/hashkv?revision=${revision}`, { signal: AbortSignal.timeout(answerTimeoutMs) });
    if (!res.ok) return null; // not at the revision yet, compacted past it, or unable: not this round
    return (await res.json()) as { hash: number; revision: number; compactRevision: number };
  } catch {
    return null;
  }
}
