// The Raft log as the core sees it: a snapshot point followed by every entry since, all in
// memory (snapshots bound its size). It tracks which entries are durable and which still have to
// be handed to the caller for persisting, and where commit and apply stand.
import { assert } from '../base/assert.js';
import type { Entry, SnapshotMeta } from './types.js';

export class RaftLog {
  /** Index and term of the last entry covered by the snapshot (0/0 before any snapshot). */
  snapshotIndex: number;
  snapshotTerm: number;
  /** entries[i].index === snapshotIndex + 1 + i. */
  private entries: Entry[];
  // Invariant: appliedIndex <= committedIndex <= lastIndex (unless a test bug is switched on).
  committedIndex: number;
  /** Highest index handed out for apply. */
  appliedIndex: number;
  /** Highest index known durable on this node's disk (advanced only by the caller's advance). */
  durableIndex: number;
  /** First index not yet handed out for persisting. */
  unstableFrom: number;

  constructor(snapshot: Pick<SnapshotMeta, 'index' | 'term'>, entries: readonly Entry[]) {
    this.snapshotIndex = snapshot.index;
    this.snapshotTerm = snapshot.term;
    this.entries = [...entries];
    entries.forEach((entry, i) => {
      assert(entry.index === snapshot.index + 1 + i, 'recovered entries are contiguous');
      assert(entry.term >= snapshot.term, 'recovered entry terms never go backwards');
    });
    this.committedIndex = snapshot.index;
    this.appliedIndex = snapshot.index;
    this.durableIndex = this.lastIndex();
    this.unstableFrom = this.lastIndex() + 1;
  }

  firstIndex(): number {
    return this.snapshotIndex + 1;
  }

  lastIndex(): number {
    return this.snapshotIndex + this.entries.length;
  }

  lastTerm(): number {
    const last = this.entries[this.entries.length - 1];
    return last === undefined ? this.snapshotTerm : last.term;
  }

  /** The term at `index`, or undefined when it is compacted away or beyond the end. */
  term(index: number): number | undefined {
    if (index === this.snapshotIndex) return this.snapshotTerm;
    if (index < this.snapshotIndex || index > this.lastIndex()) return undefined;
    return (this.entries[index - this.snapshotIndex - 1] as Entry).term;
  }

  entry(index: number): Entry {
    const entry = this.entries[index - this.snapshotIndex - 1];
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
    assert(from > this.snapshotIndex, 'slice starts after the snapshot');
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
      assert(entry.index > this.committedIndex, 'committed entries are never overwritten');
      this.truncateFrom(entry.index);
      for (const rest of entries.slice(i)) this.appendNew(rest);
      break;
    }
    return prevIndex + entries.length;
  }

  private truncateFrom(index: number): void {
    assert(index > this.snapshotIndex, 'truncation stays above the snapshot');
    this.entries.length = index - this.snapshotIndex - 1;
    this.durableIndex = Math.min(this.durableIndex, index - 1);
    this.unstableFrom = Math.min(this.unstableFrom, index);
  }

  commitTo(index: number): boolean {
    if (index <= this.committedIndex) return false;
    if (index > this.lastIndex()) assert(false, `commit ${index} is within the log (last ${this.lastIndex()})`);
    this.committedIndex = index;
    return true;
  }

  /** Entries not yet handed out for persisting; marks them as handed out. */
  takeUnstable(): Entry[] {
    const from = this.unstableFrom;
    this.unstableFrom = this.lastIndex() + 1;
    if (from > this.lastIndex()) return [];
    return this.entries.slice(from - this.snapshotIndex - 1);
  }

  hasUnstable(): boolean {
    return this.unstableFrom <= this.lastIndex();
  }

  /** The caller persisted `entries`: advance durability over those still in the log unchanged. */
  markDurable(entries: readonly Entry[]): void {
    for (const entry of entries) {
      // By log matching, the same (index, term) is the same entry with the same prefix.
      if (this.term(entry.index) !== entry.term) break;
      if (entry.index > this.durableIndex) this.durableIndex = entry.index;
    }
  }

  /** Replace everything with a snapshot received from the leader. */
  restore(meta: Pick<SnapshotMeta, 'index' | 'term'>): void {
    assert(meta.index > this.committedIndex, 'a restored snapshot is ahead of the commit index');
    this.snapshotIndex = meta.index;
    this.snapshotTerm = meta.term;
    this.entries = [];
    this.committedIndex = meta.index;
    this.appliedIndex = meta.index;
    // Nothing is durable until the caller persisted the snapshot (advance).
    this.durableIndex = 0;
    this.unstableFrom = meta.index + 1;
  }

  /** Drop entries up to `index`, which a local snapshot now covers. */
  compactTo(index: number): void {
    assert(index > this.snapshotIndex && index <= this.appliedIndex, 'compaction covers applied entries');
    const term = this.term(index);
    assert(term !== undefined, 'compaction point is in the log');
    this.entries = this.entries.slice(index - this.snapshotIndex);
    this.snapshotIndex = index;
    this.snapshotTerm = term;
  }

  /**
   * Largest index <= `index` whose term is <= `term` (fast backtracking after a rejected append:
   * every entry above it certainly conflicts with a log whose entry at `index` has `term`).
   */
  findConflictByTerm(index: number, term: number): number {
    let at = Math.min(index, this.lastIndex());
    while (at > this.snapshotIndex) {
      const atTerm = this.term(at);
      if (atTerm !== undefined && atTerm <= term) return at;
      at--;
    }
    return at;
  }
}
