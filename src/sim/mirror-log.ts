// What the driver has seen of one member's log: terms and prefix hashes, entry by entry, as the
// member's Ready batches hand entries out. The checkers compare these mirrors across members
// (log matching, leader completeness) without reaching into the core.
import { assert } from '../base/assert.js';
import type { Entry } from '../raft/index.js';
import { hashChain, hashEntry } from './hash.js';

export class MirrorLog {
  // Invariant: terms, chains and dataBytes have one item per entry; item i is index baseIndex + 1 + i.
  private baseIndex = 0;
  private baseTerm = 0;
  private baseChain = 0;
  private terms: number[] = [];
  private chains: number[] = [];
  /** Data bytes of each entry (what an append message's byte budget counts). */
  private dataBytes: number[] = [];

  get firstIndex(): number {
    return this.baseIndex + 1;
  }

  get lastIndex(): number {
    return this.baseIndex + this.terms.length;
  }

  get snapshotIndex(): number {
    return this.baseIndex;
  }

  /** The term at `index`, or undefined when the index is compacted away or past the end. */
  termAt(index: number): number | undefined {
    if (index === this.baseIndex) return this.baseTerm;
    return this.terms[index - this.baseIndex - 1];
  }

  chainAt(index: number): number | undefined {
    if (index === this.baseIndex) return this.baseChain;
    return this.chains[index - this.baseIndex - 1];
  }

  /** The data bytes of the entry at `index`, or undefined when it is compacted away or past the end. */
  dataBytesAt(index: number): number | undefined {
    return this.dataBytes[index - this.baseIndex - 1];
  }

  /** Append (truncating at the first entry's index); calls `onEntry` for each new entry. */
  append(
    entries: readonly Entry[],
    onEntry: (index: number, term: number, chain: number) => void,
  ): void {
    const first = entries[0];
    if (first === undefined) return;
    assert(
      first.index > this.baseIndex,
      `entry ${first.index} is past the snapshot ${this.baseIndex}`,
    );
    assert(
      first.index <= this.lastIndex + 1,
      `entry ${first.index} after ${this.lastIndex} leaves a gap`,
    );
    const keep = first.index - this.baseIndex - 1;
    this.terms.length = keep;
    this.chains.length = keep;
    this.dataBytes.length = keep;
    let chain = keep === 0 ? this.baseChain : (this.chains[keep - 1] as number);
    for (const entry of entries) {
      assert(entry.index === this.lastIndex + 1, 'entries are contiguous');
      chain = hashChain(chain, entry.index, hashEntry(entry.term, entry.type, entry.data));
      this.terms.push(entry.term);
      this.chains.push(chain);
      this.dataBytes.push(entry.data.byteLength);
      onEntry(entry.index, entry.term, chain);
    }
  }

  /** The log restarts at a snapshot point (installed snapshot or recovery). */
  reset(index: number, term: number, chain: number): void {
    this.baseIndex = index;
    this.baseTerm = term;
    this.baseChain = chain;
    this.terms = [];
    this.chains = [];
    this.dataBytes = [];
  }

  /** Drop entries up to `index` (the member compacted its log). */
  compact(index: number): void {
    if (index <= this.baseIndex) return;
    assert(index <= this.lastIndex, 'compaction covers only entries the log has');
    const drop = index - this.baseIndex;
    this.baseTerm = this.terms[drop - 1] as number;
    this.baseChain = this.chains[drop - 1] as number;
    this.baseIndex = index;
    this.terms = this.terms.slice(drop);
    this.chains = this.chains.slice(drop);
    this.dataBytes = this.dataBytes.slice(drop);
  }
}
