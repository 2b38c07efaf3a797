// The Raft log as the core sees it: a snapshot point followed by every entry since, all in
// memory (snapshots bound its size). It tracks which entries are durable and which still have to
// be handed to the caller for persisting, and where commit and apply stand. Every index is
// private: the rest of the core moves them only through the mutators below, which assert the
// invariants (commit and apply never go back, applied <= committed <= last, durable <= last).
import { assert } from '../base/assert.js';
import type { Entry, SnapshotMeta } from './types.js';

export interface RaftLogOptions {
  /** Test-only bug (RaftBugs.applyUncommitted): entries may be handed out before they commit. */
  readonly applyUncommitted?: boolean;
}

export class RaftLog {
  /** Index and term of the last entry covered by the snapshot (0/0 before any snapshot). */
  private snapshotAt: number;
  private snapshotTermAt: number;
  /** entries[i].index === snapshotAt + 1 + i. */
  private entries: Entry[];
  // Invariant: snapshotAt <= applied <= committed <= lastIndex() (applied may pass committed
  // only under the applyUncommitted test bug).
  private committed: number;
  /** Highest index handed out for apply. */
  private applied: number;
  /** Highest index known durable on this node's disk (advanced only by the caller's advance). */
  private durable: number;
  /** First index not yet handed out for persisting. */
  private unstableFrom: number;
  private readonly applyUncommitted: boolean;

  constructor(snapshot: Pick<SnapshotMeta, 'index' | 'term'>, entries: readonly Entry[], options: RaftLogOptions = {}) {
    assert(snapshot.index >= 0 && snapshot.term >= 0, 'the snapshot point is not negative');
    this.snapshotAt = snapshot.index;
    this.snapshotTermAt = snapshot.term;
    this.entries = [...entries];
    entries.forEach((entry, i) => {
      assert(entry.index === snapshot.index + 1 + i, 'recovered entries are contiguous');
      assert(entry.term >= snapshot.term, 'recovered entry terms never go backwards');
    });
    this.committed = snapshot.index;
    this.applied = snapshot.index;
    this.durable = this.lastIndex();
    this.unstableFrom = this.lastIndex() + 1;
    this.applyUncommitted = options.applyUncommitted === true;
  }

  get snapshotIndex(): number {
    return this.snapshotAt;
  }

  get snapshotTerm(): number {
    return this.snapshotTermAt;
  }

  /** Highest index known committed (a quorum stored it). */
  get committedIndex(): number {
    return this.committed;
  }

  /** Highest index handed out for apply. */
  get appliedIndex(): number {
    return this.applied;
  }

  /** Highest index known durable on this node's disk. */
  get durableIndex(): number {
    return this.durable;
  }

  firstIndex(): number {
    return this.snapshotAt + 1;
  }

  lastIndex(): number {
    return this.snapshotAt + this.entries.length;
  }

  lastTerm(): number {
    const last = this.entries[this.entries.length - 1];
    return last === undefined ? this.snapshotTermAt : last.term;
  }

  /** The term at `index`, or undefined when it is compacted away or beyond the end. */
  term(index: number): number | undefined {
    if (index === this.snapshotAt) return this.snapshotTermAt;
    if (index < this.snapshotAt || index > this.lastIndex()) return undefined;
    return (this.entries[index - this.snapshotAt - 1] as Entry).term;
  }

  entry(index: number): Entry {
    const entry = this.entries[index - this.snapshotAt - 1];
    // The message is built only on failure (this runs for every entry the log hands out).
    if (entry === undefined || entry.index !== index) return assert(false, `entry ${index} is in memory`) as never;
    return entry;
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** Raft's election restriction: is a log ending at (lastTerm, lastIndex) at least as new as ours? */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const ourTerm = this.lastTerm();
    return lastTerm > ourTerm || (lastTerm === ourTerm && lastIndex >= this.lastIndex());
  }

  /** Entries in [from, to], at most `bytesMax` of data (always at least one when any exist). */
  slice(from: number, to: number, bytesMax: number): Entry[] {
    assert(from > this.snapshotAt, 'slice starts after the snapshot');
    const out: Entry[] = [];
    let bytes = 0;
    for (let index = from; index <= Math.min(to, this.lastIndex()); index++) {
      const entry = this.entry(index);
      bytes += entry.data.byteLength;
      if (out.length > 0 && bytes > bytesMax) break;
      out.push(entry);
    }
    return out;
  }

  /** Append entries the leader created (contiguous after the last one). */
  appendNew(entry: Entry): void {
    assert(entry.index === this.lastIndex() + 1, 'new entries extend the log contiguously');
    assert(entry.term >= this.lastTerm(), 'entry terms never go backwards');
    this.entries.push(entry);
  }

  /**
   * Follower side: merge entries received after a matching (prevIndex, prevTerm). Entries that
   * already match are kept; the first conflicting one truncates the rest (never a committed one).
   * Returns the index of the last entry now known to match the leader.
   */
  merge(prevIndex: number, entries: readonly Entry[]): number {
    for (const [i, entry] of entries.entries()) {
      assert(entry.index === prevIndex + 1 + i, 'append carries contiguous entries');
      if (this.matchTerm(entry.index, entry.term)) continue;
      assert(entry.index > this.committed, 'committed entries are never overwritten');
      this.truncateFrom(entry.index);
      for (const rest of entries.slice(i)) this.appendNew(rest);
      break;
    }
    return prevIndex + entries.length;
  }

  private truncateFrom(index: number): void {
    assert(index > this.snapshotAt, 'truncation stays above the snapshot');
    this.entries.length = index - this.snapshotAt - 1;
    this.durable = Math.min(this.durable, index - 1);
    this.unstableFrom = Math.min(this.unstableFrom, index);
  }

  /**
   * Learn that everything through `index` is committed. Returns false when that is not news: a
   * commit index never goes back (an older leader's message may carry a smaller one).
   */
  commitTo(index: number): boolean {
    if (index <= this.committed) return false;
    if (index > this.lastIndex()) assert(false, `commit ${index} is within the log (last ${this.lastIndex()})`);
    this.committed = index;
    assert(this.applied <= this.committed || this.applyUncommitted, 'applied never passes committed');
    return true;
  }

  /** Recovery: the state machine already applied through `index`; it is not handed out again. */
  recoverApplied(index: number): void {
    assert(index >= this.snapshotAt, 'the snapshot is applied');
    assert(index <= this.committed, 'only committed entries were applied');
    this.applied = index;
  }

  /** Committed entries through `index` were handed out for apply, in order. */
  appliedTo(index: number): void {
    assert(index > this.applied, `apply moves forward (${this.applied} -> ${index})`);
    if (index > this.committed && !this.applyUncommitted) {
      assert(false, `applied ${index} is committed (commit ${this.committed})`);
    }
    assert(index <= this.lastIndex(), 'applied entries are in the log');
    this.applied = index;
  }

  /** Whether committed entries wait to be handed out. */
  hasToApply(): boolean {
    return this.applied < this.applyLimit();
  }

  /** The highest index that may be handed out for apply. */
  applyLimit(): number {
    return this.applyUncommitted ? this.lastIndex() : this.committed;
  }

  /** Entries not yet handed out for persisting; marks them as handed out. */
  takeUnstable(): Entry[] {
    const from = this.unstableFrom;
    this.unstableFrom = this.lastIndex() + 1;
    if (from > this.lastIndex()) return [];
    return this.entries.slice(from - this.snapshotAt - 1);
  }

  hasUnstable(): boolean {
    return this.unstableFrom <= this.lastIndex();
  }

  /** The caller persisted `entries`: advance durability over those still in the log unchanged. */
  markDurable(entries: readonly Entry[]): void {
    for (const entry of entries) {
      // By log matching, the same (index, term) is the same entry with the same prefix.
      if (this.term(entry.index) !== entry.term) break;
      if (entry.index > this.durable) this.durable = entry.index;
    }
    assert(this.durable <= this.lastIndex(), 'durable entries are in the log');
  }

  /**
   * The caller persisted a snapshot at `meta`: if it is still the one the log starts from, its
   * point is durable (a newer snapshot or compaction since then leaves durability as it is).
   */
  markSnapshotDurable(meta: Pick<SnapshotMeta, 'index' | 'term'>): void {
    if (meta.index !== this.snapshotAt) return;
    if (meta.index > this.durable) this.durable = meta.index;
    assert(this.durable <= this.lastIndex(), 'durable entries are in the log');
  }

  /** Replace everything with a snapshot received from the leader. */
  restore(meta: Pick<SnapshotMeta, 'index' | 'term'>): void {
    assert(meta.index > this.committed, 'a restored snapshot is ahead of the commit index');
    this.snapshotAt = meta.index;
    this.snapshotTermAt = meta.term;
    this.entries = [];
    this.committed = meta.index;
    this.applied = meta.index;
    // Nothing is durable until the caller persisted the snapshot (advance).
    this.durable = 0;
    this.unstableFrom = meta.index + 1;
    assert(this.lastIndex() === meta.index, 'a restored log ends at its snapshot');
  }

  /** Drop entries up to `index`, which a local snapshot now covers. */
  compactTo(index: number): void {
    assert(index > this.snapshotAt && index <= this.applied, 'compaction covers applied entries');
    const term = this.term(index);
    assert(term !== undefined, 'compaction point is in the log');
    this.entries = this.entries.slice(index - this.snapshotAt);
    this.snapshotAt = index;
    this.snapshotTermAt = term;
    assert(this.firstIndex() === index + 1, 'the log starts right after the snapshot');
  }

  /**
   * Largest index <= `index` whose term is <= `term` (fast backtracking after a rejected append:
   * every entry above it certainly conflicts with a log whose entry at `index` has `term`).
   */
  findConflictByTerm(index: number, term: number): number {
    let at = Math.min(index, this.lastIndex());
    while (at > this.snapshotAt) {
      const atTerm = this.term(at);
      if (atTerm !== undefined && atTerm <= term) return at;
      at--;
    }
    return at;
  }
}
