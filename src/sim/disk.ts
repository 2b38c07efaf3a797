// One member's disk: writes complete in submission order after a latency, and only a completed
// write is durable. A crash loses every write still in progress; the one being written at the
// time may leave a torn prefix of its entries (a WAL keeps whole records up to the tear, never a
// hard state or snapshot from a half-written batch).
import { assert } from '../base/assert.js';
import type { Random } from '../base/random.js';
import { chance, randomInt } from '../base/random.js';
import type {
  ConfState,
  Entry,
  HardState,
  MemberId,
  PeerRecord,
  Ready,
  RecoveredState,
  Snapshot,
} from '../raft/index.js';

export type DiskWrite =
  | {
      readonly kind: 'ready';
      readonly snapshot: Snapshot | null;
      readonly entries: readonly Entry[];
      readonly hardState: HardState | null;
      /** What peers promised this member, kept with the write (null: unchanged since the last). */
      readonly ledger?: LedgerRecords | null;
    }
  /** The member's own compaction: keep the snapshot, drop the entries it covers. */
  | { readonly kind: 'compact'; readonly snapshot: Snapshot }
  /** A sync of the state machine's own store (a checkpoint): nothing of the log changes. */
  | { readonly kind: 'sync' };

interface PendingWrite {
  readonly id: number;
  readonly doneAtMs: number;
  readonly write: DiskWrite;
}

type LedgerRecords = readonly (readonly [MemberId, PeerRecord])[];

export const emptyHardState: HardState = { term: 0, vote: 0, commit: 0 };

export interface DurableCopy {
  readonly hardState: HardState;
  readonly ledger: LedgerRecords;
  readonly snapshot: Snapshot | null;
  readonly entries: readonly Entry[];
}

export class SimDisk {
  private hardState: HardState = emptyHardState;
  private ledger: LedgerRecords = [];
  private snapshot: Snapshot | null = null;
  // Invariant: entries are contiguous and entries[0].index === snapshotIndex + 1.
  private entries: Entry[] = [];
  private readonly pending: PendingWrite[] = [];
  private nextId = 1;
  private busyUntilMs = 0;

  constructor(
    private readonly random: Random,
    private readonly latencyMsMin: number,
    private readonly latencyMsMax: number,
  ) {}

  /** Queue a write; returns its id and the simulated time at which it becomes durable. */
  submit(nowMs: number, write: DiskWrite): { id: number; doneAtMs: number } {
    const latency = randomInt(this.random, this.latencyMsMin, this.latencyMsMax);
    const doneAtMs = Math.max(nowMs, this.busyUntilMs) + latency;
    this.busyUntilMs = doneAtMs;
    const id = this.nextId++;
    this.pending.push({ id, doneAtMs, write });
    return { id, doneAtMs };
  }

  /** Make every write up to and including `id` durable (writes finish in order). */
  completeThrough(id: number): void {
    while (this.pending.length > 0 && (this.pending[0] as PendingWrite).id <= id) {
      this.persist((this.pending.shift() as PendingWrite).write);
    }
  }

  /** Power loss at `nowMs`: finished writes stay, the one in progress may tear, the rest vanish. */
  crash(nowMs: number, tornWriteRate: number): { tornEntries: number; lostWrites: number } {
    while (this.pending.length > 0 && (this.pending[0] as PendingWrite).doneAtMs <= nowMs) {
      this.persist((this.pending.shift() as PendingWrite).write);
    }
    let tornEntries = 0;
    const inProgress = this.pending[0];
    if (
      inProgress !== undefined &&
      inProgress.write.kind === 'ready' &&
      chance(this.random, tornWriteRate)
    ) {
      const { snapshot, entries } = inProgress.write;
      if (snapshot === null && entries.length > 0) {
        tornEntries = randomInt(this.random, 0, entries.length - 1);
        if (tornEntries > 0) {
          this.persist({
            kind: 'ready',
            snapshot: null,
            entries: entries.slice(0, tornEntries),
            hardState: null,
          });
        }
      }
    }
    const lostWrites = this.pending.length;
    this.pending.length = 0;
    this.busyUntilMs = nowMs;
    return { tornEntries, lostWrites };
  }

  recover(initialConfState: ConfState): RecoveredState {
    assert(this.pending.length === 0, 'recover only after a crash or before the first boot');
    const snapshotIndex = this.snapshot?.meta.index ?? 0;
    const lastIndex = snapshotIndex + this.entries.length;
    assert(
      this.hardState.commit <= lastIndex,
      'a durable commit index never passes the durable log',
    );
    return {
      hardState: this.hardState,
      snapshot: this.snapshot,
      entries: [...this.entries],
      initialConfState,
      appliedIndex: snapshotIndex,
      ledger: this.ledger,
    };
  }

  /** What a copy of the data directory taken now holds: the durable state only. */
  durableCopy(): DurableCopy {
    return { hardState: this.hardState, ledger: this.ledger, snapshot: this.snapshot, entries: [...this.entries] };
  }

  /**
   * The data directory replaced by an older copy (an operator's restore, a VM rolled back): only
   * while the member is down. Everything written since the copy is gone, its votes included.
   */
  restoreCopy(copy: DurableCopy): void {
    assert(this.pending.length === 0, 'a copy is restored only while the member is down');
    this.hardState = copy.hardState;
    this.ledger = copy.ledger;
    this.snapshot = copy.snapshot;
    this.entries = [...copy.entries];
  }

  durableHardState(): HardState {
    return this.hardState;
  }

  private persist(write: DiskWrite): void {
    if (write.kind === 'sync') return;
    if (write.kind === 'compact') {
      this.persistCompaction(write.snapshot);
      return;
    }
    if (write.snapshot !== null) {
      // An installed snapshot replaces the whole log: the leader's log is the truth past it.
      assert(
        write.snapshot.meta.index >= (this.snapshot?.meta.index ?? 0),
        'snapshots only move forward',
      );
      this.snapshot = write.snapshot;
      this.entries = [];
    }
    this.persistEntries(write.entries);
    if (write.hardState !== null) {
      assert(write.hardState.term >= this.hardState.term, 'a durable term never goes back');
      this.hardState = write.hardState;
    }
    if (write.ledger !== undefined && write.ledger !== null) this.ledger = write.ledger;
  }

  private persistEntries(entries: readonly Entry[]): void {
    const first = entries[0];
    if (first === undefined) return;
    const snapshotIndex = this.snapshot?.meta.index ?? 0;
    assert(
      first.index > snapshotIndex,
      `entry ${first.index} is past the snapshot ${snapshotIndex}`,
    );
    assert(
      first.index <= snapshotIndex + this.entries.length + 1,
      `entry ${first.index} leaves a gap`,
    );
    // An entry at an index already on disk replaces that index and every later one.
    this.entries.length = first.index - snapshotIndex - 1;
    for (const entry of entries) {
      assert(entry.index === snapshotIndex + this.entries.length + 1, 'entries are contiguous');
      this.entries.push(entry);
    }
  }

  private persistCompaction(snapshot: Snapshot): void {
    const oldIndex = this.snapshot?.meta.index ?? 0;
    if (snapshot.meta.index <= oldIndex) return;
    const keepFrom = snapshot.meta.index - oldIndex;
    assert(keepFrom <= this.entries.length, 'a compaction covers only durable entries');
    this.entries = this.entries.slice(keepFrom);
    this.snapshot = snapshot;
  }
}

/** The write a Ready asks for (the caller skips Readies with nothing to persist). */
export function diskWriteOfReady(ready: Ready, ledger: LedgerRecords | null = null): DiskWrite {
  return {
    kind: 'ready',
    snapshot: ready.snapshot,
    entries: ready.entries,
    hardState: ready.hardState,
    ledger,
  };
}
