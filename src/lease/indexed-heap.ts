// A binary min-heap of objects that remember their own position (an intrusive heap), so that an
// item can be re-keyed or removed in O(log n) without searching, and nothing is allocated per
// operation: the expiry tracker keeps each lease in its heaps exactly once, for life.
// Equal keys pop in ascending id order, so that batches are deterministic and readable.
import { assert } from '../base/assert.js';

/** How the heap reads an item's key and id and keeps its position (-1 = not in this heap). */
export interface HeapSlots<T> {
  key(item: T): number;
  id(item: T): number;
  position(item: T): number;
  setPosition(item: T, at: number): void;
}

export class IndexedMinHeap<T> {
  private readonly items: T[] = [];

  constructor(private readonly slots: HeapSlots<T>) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    assert(this.slots.position(item) === -1, 'an item is in a heap at most once');
    this.items.push(item);
    this.siftUp(item, this.items.length - 1);
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  /** The item's key changed (either way): restore the order. */
  update(item: T): void {
    const at = this.slots.position(item);
    assert(at >= 0 && this.items[at] === item, 'an updated item is in the heap');
    if (at > 0 && this.less(item, this.items[(at - 1) >> 1] as T)) this.siftUp(item, at);
    else this.siftDown(item, at);
  }

  remove(item: T): void {
    const at = this.slots.position(item);
    assert(at >= 0 && this.items[at] === item, 'a removed item is in the heap');
    this.slots.setPosition(item, -1);
    const last = this.items.pop() as T;
    if (at === this.items.length) return; // it was the last one
    this.items[at] = last;
    this.slots.setPosition(last, at);
    this.update(last);
  }

  clear(): void {
    for (const item of this.items) this.slots.setPosition(item, -1);
    this.items.length = 0;
  }

  private siftUp(item: T, from: number): void {
    const items = this.items;
    let at = from;
    while (at > 0) {
      const parentAt = (at - 1) >> 1;
      const parent = items[parentAt] as T;
      if (!this.less(item, parent)) break;
      items[at] = parent;
      this.slots.setPosition(parent, at);
      at = parentAt;
    }
    items[at] = item;
    this.slots.setPosition(item, at);
  }

  private siftDown(item: T, from: number): void {
    const items = this.items;
    const count = items.length;
    let at = from;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= count) break;
      const right = left + 1;
      let child = items[left] as T;
      let childAt = left;
      if (right < count && this.less(items[right] as T, child)) {
        child = items[right] as T;
        childAt = right;
      }
      if (!this.less(child, item)) break;
      items[at] = child;
      this.slots.setPosition(child, at);
      at = childAt;
    }
    items[at] = item;
    this.slots.setPosition(item, at);
  }

  private less(a: T, b: T): boolean {
    const ka = this.slots.key(a);
    const kb = this.slots.key(b);
    return ka < kb || (ka === kb && this.slots.id(a) < this.slots.id(b));
  }
}
