// An in-memory ordered KvEngine for the simulator and fast tests. Not durable: never use it
// where durability is claimed. Keys live in a sorted array of byte strings (one char per byte,
// so string order is byte order) beside a map; a write transaction keeps an undo log so a
// throwing body leaves nothing behind, like LMDB's abort.
import { assert } from '../base/assert.js';
import { fromLatin1, latin1 } from './bytes.js';
import type { KvEngine, KvEntry, KvRange, KvWriter } from './types.js';

type Undo = { readonly key: string; readonly value: Uint8Array | undefined };

export class MemoryEngine implements KvEngine {
  private sortedKeys: string[] = [];
  private values = new Map<string, Uint8Array>();
  private undo: Undo[] | null = null;
  /** Bumped on every write, to catch a write during a range iteration (a caller bug). */
  private generation = 0;

  get entryCount(): number {
    return this.sortedKeys.length;
  }

  get(key: Uint8Array): Uint8Array | undefined {
    return this.values.get(latin1(key));
  }

  *range(range: KvRange): Generator<KvEntry, void, undefined> {
    const end = latin1(range.end);
    const generation = this.generation;
    for (let i = this.lowerBound(latin1(range.start)); i < this.sortedKeys.length; i++) {
      assert(this.generation === generation, 'write during a range iteration');
      const key = this.sortedKeys[i] as string;
      if (key >= end) return;
      yield { key: fromLatin1(key), value: this.values.get(key) as Uint8Array };
    }
  }

  write<T>(body: (writer: KvWriter) => T): T {
    assert(this.undo === null, 'write transactions do not nest');
    const undo: Undo[] = [];
    this.undo = undo;
    const writer: KvWriter = {
      get: (key) => this.get(key),
      range: (range) => this.range(range),
      put: (key, value) => this.set(latin1(key), new Uint8Array(value)),
      delete: (key) => this.set(latin1(key), undefined),
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
    // Values are never mutated in place, so copying the key list gives a consistent view.
    const keys = this.sortedKeys.slice();
    const values = new Map(this.values);
    for (const key of keys) yield { key: fromLatin1(key), value: values.get(key) as Uint8Array };
  }

  replaceAll(entries: Iterable<KvEntry>): void {
    assert(this.undo === null, 'replaceAll inside a write transaction');
    const values = new Map<string, Uint8Array>();
    for (const entry of entries) values.set(latin1(entry.key), new Uint8Array(entry.value));
    this.values = values;
    this.sortedKeys = [...values.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    this.generation++;
  }

  private set(key: string, value: Uint8Array | undefined): void {
    assert(this.undo !== null, 'writes happen inside write()');
    this.undo.push({ key, value: this.values.get(key) });
    this.setRaw(key, value);
  }

  private setRaw(key: string, value: Uint8Array | undefined): void {
    this.generation++;
    const present = this.values.has(key);
    if (value === undefined) {
      if (!present) return;
      this.values.delete(key);
      this.sortedKeys.splice(this.lowerBound(key), 1);
      return;
    }
    if (!present) this.sortedKeys.splice(this.lowerBound(key), 0, key);
    this.values.set(key, value);
  }

  private lowerBound(key: string): number {
    let low = 0;
    let high = this.sortedKeys.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((this.sortedKeys[middle] as string) < key) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}
