// A binary min-heap keyed by a number, for "what expires next" without scanning every lease.
// Equal keys pop in ascending value order, so that batches are deterministic and readable.
export class MinHeap<T extends number> {
  private readonly items: { key: number; value: T }[] = [];

  get size(): number {
    return this.items.length;
  }

  push(key: number, value: T): void {
    const items = this.items;
    const item = { key, value };
    items.push(item);
    let at = items.length - 1;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!less(item, items[parent] as { key: number; value: T })) break;
      items[at] = items[parent] as { key: number; value: T };
      at = parent;
    }
    items[at] = item;
  }

  peekKey(): number | undefined {
    return this.items[0]?.key;
  }

  pop(): { key: number; value: T } | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    let at = 0;
    for (;;) {
      const left = 2 * at + 1;
      const right = left + 1;
      let smallest = at;
      let smallestItem = last;
      if (left < items.length && less(items[left] as { key: number; value: T }, smallestItem)) {
        smallest = left;
        smallestItem = items[left] as { key: number; value: T };
      }
      if (right < items.length && less(items[right] as { key: number; value: T }, smallestItem)) smallest = right;
      if (smallest === at) break;
      items[at] = items[smallest] as { key: number; value: T };
      at = smallest;
    }
    items[at] = last;
    return top;
  }

  clear(): void {
    this.items.length = 0;
  }
}

function less(a: { key: number; value: number }, b: { key: number; value: number }): boolean {
  return a.key < b.key || (a.key === b.key && a.value < b.value);
}
