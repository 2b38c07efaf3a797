// A binary min-heap of timed events. Ties on time break by insertion sequence, so the order of
// events is a pure function of the order they were scheduled in: the basis of replay by seed.
import { assert } from '../base/assert.js';

interface Slot<T> {
  readonly timeMs: number;
  readonly sequence: number;
  readonly item: T;
}

export class EventQueue<T> {
  private readonly heap: Slot<T>[] = [];
  private sequence = 0;

  get size(): number {
    return this.heap.length;
  }

  push(timeMs: number, item: T): void {
    assert(Number.isFinite(timeMs) && timeMs >= 0, 'event time is a finite non-negative number');
    const heap = this.heap;
    heap.push({ timeMs, sequence: this.sequence++, item });
    let child = heap.length - 1;
    while (child > 0) {
      const parent = (child - 1) >> 1;
      if (!before(heap[child] as Slot<T>, heap[parent] as Slot<T>)) break;
      swap(heap, child, parent);
      child = parent;
    }
  }

  peekTime(): number | null {
    return this.heap[0]?.timeMs ?? null;
  }

  pop(): { timeMs: number; item: T } | null {
    const heap = this.heap;
    const top = heap[0];
    if (top === undefined) return null;
    const last = heap.pop() as Slot<T>;
    if (heap.length > 0) {
      heap[0] = last;
      let parent = 0;
      for (;;) {
        const left = parent * 2 + 1;
        const right = left + 1;
        let smallest = parent;
        if (left < heap.length && before(heap[left] as Slot<T>, heap[smallest] as Slot<T>)) {
          smallest = left;
        }
        if (right < heap.length && before(heap[right] as Slot<T>, heap[smallest] as Slot<T>)) {
          smallest = right;
        }
        if (smallest === parent) break;
        swap(heap, parent, smallest);
        parent = smallest;
      }
    }
    return { timeMs: top.timeMs, item: top.item };
  }
}

function before<T>(a: Slot<T>, b: Slot<T>): boolean {
  return a.timeMs < b.timeMs || (a.timeMs === b.timeMs && a.sequence < b.sequence);
}

function swap<T>(heap: T[], i: number, j: number): void {
  const t = heap[i] as T;
  heap[i] = heap[j] as T;
  heap[j] = t;
}
