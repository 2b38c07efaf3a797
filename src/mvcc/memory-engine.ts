// An in-memory ordered KvEngine for the simulator and fast tests. Not durable: never use it
// where durability is claimed. Entries live in one array sorted by key bytes (binary search for
// reads, splice for writes); a write transaction keeps an undo log so a throwing body leaves
// nothing behind, like LMDB's abort.
import { assert } from '../base/assert.js';
import { compareBytes, lowerBoundByKey } from './bytes.js';
import type { KvEngine, KvEntry, KvRange, KvWriter } from './types.js';

type Undo = { readonly key: Uint8Array; readonly value: Uint8Array | undefined };

export class MemoryEngine implements KvEngine {
  /** Invariant: strictly ascending by key; entries are replaced, never mutated in place. */
  private entries: KvEntry[] = [];
  private undo: Undo[] | null = null;
  /** Bumped on every write, to catch a write during a range iteration (a caller bug). */
  private generation = 0;

  get entryCount(): number {
    return this.entries.length;
  }

  get(key: Uint8Array): Uint8Array | undefined {
    const at = this.lowerBound(key);
    const entry = this.entries[at];
    return entry !== undefined && compareBytes(entry.key, key) === 0 ? entry.value : undefined;
  }

  *range(range: KvRange): Generator<KvEntry, void, undefined> {
    const generation = this.generation;
    if (range.reverse === true) {
      for (let i = this.lowerBound(range.end) - 1; i >= 0; i--) {
        assert(this.generation === generation, 'write during a range iteration');
        const entry = this.entries[i] as KvEntry;
        if (compareBytes(entry.key, range.start) < 0) return;
        yield entry;
      }
      return;
    }
    for (let i = this.lowerBound(range.start); i < this.entries.length; i++) {
      assert(this.generation === generation, 'write during a range iteration');
      const entry = this.entries[i] as KvEntry;
      if (compareBytes(entry.key, range.end) >= 0) return;
      yield entry;
    }
  }

  count(range: KvRange): number {
    return Math.max(0, this.lowerBound(range.end) - this.lowerBound(range.start));
  }

  write<T>(body: (writer: KvWriter) => T): T {
    assert(this.undo === null, 'write transactions do not nest');
    const undo: Undo[] = [];
    this.undo = undo;
    const writer: KvWriter = {
      get: (key) => this.get(key),
      range: (range) => this.range(range),
      put: (key, value) => this.set(key, new Uint8Array(value)),
      delete: (key) => this.set(key, undefined),
    };
    try {
      return body(writer);
    } catch (error) {
      for (let i = undo.length - 1; i >= 0; i--) {
        const step = undo[i] as Undo;
        this.setRaw(step.key, step.value);
      }
      throw error;
    } finally {
      this.undo = null;
    }
  }

  *snapshotEntries(): Generator<KvEntry, void, undefined> {
    // Entries are immutable, so copying the array gives a consistent view.
    yield* this.entries.slice();
  }

  replaceAll(entries: Iterable<KvEntry>): void {
    assert(this.undo === null, 'replaceAll inside a write transaction');
    const copied: KvEntry[] = [];
    for (const entry of entries) {
      copied.push({ key: new Uint8Array(entry.key), value: new Uint8Array(entry.value) });
    }
    copied.sort((a, b) => compareBytes(a.key, b.key));
    for (let i = 1; i < copied.length; i++) {
      assert(compareBytes((copied[i - 1] as KvEntry).key, (copied[i] as KvEntry).key) < 0, 'duplicate key');
    }
    this.entries = copied;
    this.generation++;
  }

  private set(key: Uint8Array, value: Uint8Array | undefined): void {
    assert(this.undo !== null, 'writes happen inside write()');
    this.undo.push({ key: new Uint8Array(key), value: this.get(key) });
    this.setRaw(key, value);
  }

  private setRaw(key: Uint8Array, value: Uint8Array | undefined): void {
    this.generation++;
    const at = this.lowerBound(key);
    const entry = this.entries[at];
    const present = entry !== undefined && compareBytes(entry.key, key) === 0;
    if (value === undefined) {
      if (present) this.entries.splice(at, 1);
      return;
    }
    const next = { key: present ? entry.key : new Uint8Array(key), value };
    if (present) this.entries[at] = next;
    else this.entries.splice(at, 0, next);
  }

  private lowerBound(key: Uint8Array): number {
    return lowerBoundByKey(this.entries, key);
  }
}
