// The shape of the log as the WAL sees it: which indexes it holds and their terms. The writer
// keeps one to check each save and to restate the log's start in new segments; replay rebuilds
// one from the records. Both apply a snapshot marker with the same rule, so recovery ends in the
// state the writer believed it had written.
import { assert } from '../base/assert.js';
import type { SnapshotMeta } from '../raft/index.js';

export class LogView {
  // Invariant: terms[k] is the term of entry startIndex + 1 + k; indexes <= startIndex are
  // covered by a snapshot (or, mid-replay, by released segments a later marker must cover).
  private terms: number[] = [];

  constructor(private start: number) {
    assert(Number.isSafeInteger(start) && start >= 0, 'log start is a count');
  }

  get startIndex(): number {
    return this.start;
  }

  get lastIndex(): number {
    return this.start + this.terms.length;
  }

  termAt(index: number): number | undefined {
    if (index <= this.start || index > this.lastIndex) return undefined;
    return this.terms[index - this.start - 1];
  }

  /** Appends one entry; an index already present replaces it and every later one (Raft). */
  append(index: number, term: number): void {
    // Messages are built only on failure (once per appended entry).
    if (index <= this.start) assert(false, `entry ${index} is not below the log start ${this.start}`);
    if (index > this.lastIndex + 1) assert(false, `entry ${index} leaves no gap after ${this.lastIndex}`);
    this.terms.length = index - this.start - 1;
    this.terms.push(term);
    assert(this.lastIndex === index);
  }

  /**
   * Replay only: an entry rewritten below a log start that came from released segments (not
   * from a snapshot) restarts the view just before it; a later marker must cover the rest.
   */
  rebase(start: number): void {
    assert(start < this.start, 'rebase moves the start down');
    this.start = start;
    this.terms = [];
  }

  /**
   * Applies a snapshot marker and says what happened to the entries. A marker whose index holds
   * an entry of the same term is a compaction: later entries stay. Otherwise the snapshot came
   * from a leader and replaces the whole log (Raft §7). A marker at or below the start only
   * records coverage.
   */
  applySnapshot(meta: SnapshotMeta): 'compacted' | 'replaced' | 'covered' {
    if (meta.index <= this.start) return 'covered';
    if (this.termAt(meta.index) === meta.term) {
      this.terms = this.terms.slice(meta.index - this.start);
      this.start = meta.index;
      return 'compacted';
    }
    this.terms = [];
    this.start = meta.index;
    assert(this.lastIndex === meta.index);
    return 'replaced';
  }
}
