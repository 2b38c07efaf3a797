// Writes applied but not yet committed to LMDB (lmdb-engine.ts's write-behind): an LMDB commit
// costs ~70 µs of CPU however little it writes (measured on this machine kind: 1 put per commit
// ~90 µs per put, 13 per commit ~27, 50 per commit ~18), and a member commits once per Ready, a
// handful of puts each at 16 clients. Holding a few milliseconds of writes here and committing
// them together costs one commit for many Readys, and a page each for keys that share it.
//
// Reads see these writes first (a deletion hides the stored value), so nothing above the engine
// can tell. A write transaction's changes join only when its body returns (an undo list takes
// them back if it throws). Kept in key order (binary insertion) so a range read finds its part
// with two searches, whatever the write pattern (a lock queue reads a range after each put).
import { assert } from '../base/assert.js';
import { compareBytes, lowerBoundByKey } from '../mvcc/index.js';
import type { KvEntry, KvRange } from '../mvcc/index.js';

/** Never changed once made (a later write replaces it), so a range taken earlier keeps its values. */
interface Pending {
  readonly key: Uint8Array;
  /** undefined: deleted. */
  readonly value: Uint8Array | undefined;
}

/** What one write transaction changed, to take back if its body throws. */
interface Undo {
  readonly name: string;
  /** The entry before, or `absent` if the key was not pending. */
  readonly before: Pending | typeof absent;
}

const absent = Symbol('absent');

export class PendingWrites {
  private readonly byName = new Map<string, Pending>();
  /** Ascending by key bytes. */
  private readonly sorted: Pending[] = [];
  private undo: Undo[] | null = null;
  private bytesHeld = 0;

  get size(): number {
    return this.sorted.length;
  }

  /** Keys and values held, bytes (an estimate of the memory the writes take). */
  get bytes(): number {
    return this.bytesHeld;
  }

  /** The pending value: a Uint8Array, undefined (deleted), or `miss` (not pending: ask the store). */
  get(key: Uint8Array): Uint8Array | undefined | typeof miss {
    const entry = this.byName.get(nameOf(key));
    return entry === undefined ? miss : entry.value;
  }

  /** Starts a write transaction's changes (until commit or rollback). */
  begin(): void {
    assert(this.undo === null, 'write transactions do not nest');
    this.undo = [];
  }

  /** Records a put (value) or a deletion (undefined); copies both, as Buffers (as LMDB's reads return them). */
  set(key: Uint8Array, value: Uint8Array | undefined): void {
    assert(this.undo !== null, 'pending writes happen inside a write transaction');
    const name = nameOf(key);
    const copy = value === undefined ? undefined : Buffer.from(value);
    const entry = this.byName.get(name);
    if (entry !== undefined) {
      this.undo.push({ name, before: entry });
      const replaced: Pending = { key: entry.key, value: copy };
      this.replace(name, entry, replaced);
      this.bytesHeld += (copy?.length ?? 0) - (entry.value?.length ?? 0);
      return;
    }
    this.undo.push({ name, before: absent });
    const added: Pending = { key: Buffer.from(key), value: copy };
    this.byName.set(name, added);
    this.sorted.splice(this.lowerBound(key), 0, added);
    this.bytesHeld += key.length + (copy?.length ?? 0);
  }

  /** The transaction's changes stay. */
  commit(): void {
    assert(this.undo !== null, 'commit without begin');
    this.undo = null;
  }

  /** The transaction's changes are taken back, newest first. */
  rollback(): void {
    assert(this.undo !== null, 'rollback without begin');
    for (let i = this.undo.length - 1; i >= 0; i--) {
      const { name, before } = this.undo[i] as Undo;
      const entry = this.byName.get(name) as Pending;
      if (before === absent) {
        this.byName.delete(name);
        this.sorted.splice(this.indexOf(entry), 1);
        this.bytesHeld -= entry.key.length + (entry.value?.length ?? 0);
      } else {
        this.replace(name, entry, before);
        this.bytesHeld += (before.value?.length ?? 0) - (entry.value?.length ?? 0);
      }
    }
    this.undo = null;
  }

  /** The pending entries in [start, end), deletions included, in the range's order. */
  inRange(range: KvRange): Pending[] {
    if (this.sorted.length === 0 || compareBytes(range.start, range.end) >= 0) return [];
    const part = this.sorted.slice(this.lowerBound(range.start), this.lowerBound(range.end));
    return range.reverse === true ? part.reverse() : part;
  }

  /** Every pending entry, ascending, and empties the set (for the commit to the store). */
  drain(): Pending[] {
    assert(this.undo === null, 'no drain inside a write transaction');
    const all = this.sorted.splice(0);
    this.byName.clear();
    this.bytesHeld = 0;
    return all;
  }

  /** Puts `next` where `entry` is (the same key, named `name`). */
  private replace(name: string, entry: Pending, next: Pending): void {
    this.sorted[this.indexOf(entry)] = next;
    this.byName.set(name, next);
  }

  private indexOf(entry: Pending): number {
    const at = this.lowerBound(entry.key);
    assert(this.sorted[at] === entry, 'a pending entry is where its key sorts');
    return at;
  }

  private lowerBound(key: Uint8Array): number {
    return lowerBoundByKey(this.sorted, key);
  }
}

export const miss = Symbol('miss');

/**
 * The store's entries of `range` with the pending ones laid over them: a pending value replaces
 * the stored one, a pending deletion hides it. Both inputs come in the range's order.
 */
export function* overlaid(stored: Iterable<KvEntry>, pending: readonly Pending[], reverse: boolean): Generator<KvEntry, void, undefined> {
  let next = 0;
  const before = (a: Uint8Array, b: Uint8Array): number => (reverse ? compareBytes(b, a) : compareBytes(a, b));
  for (const entry of stored) {
    while (next < pending.length && before((pending[next] as Pending).key, entry.key) < 0) {
      const { key, value } = pending[next++] as Pending;
      if (value !== undefined) yield { key, value };
    }
    if (next < pending.length && before((pending[next] as Pending).key, entry.key) === 0) {
      const { key, value } = pending[next++] as Pending;
      if (value !== undefined) yield { key, value };
      continue;
    }
    yield entry;
  }
  while (next < pending.length) {
    const { key, value } = pending[next++] as Pending;
    if (value !== undefined) yield { key, value };
  }
}

/** latin1 maps each byte to one char: equal strings for equal byte strings. */
function nameOf(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');
}
