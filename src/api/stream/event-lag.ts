// Watch event lag on this member: from the apply of a revision to the hand-off of the batch that
// carries it to a client's connection (SSE, /v1/stream, gRPC Watch). The apply times of the last
// `capacity` applied batches are kept in a ring; a revision applied before the ring's oldest entry
// (a resumed watch catching up on old history) is not timed.

export class EventLag {
  private readonly revisions: number[];
  private readonly atMs: number[];
  private next = 0;
  private size = 0;

  constructor(
    /** Revisions at or below this were applied before the ring began: never timed. */
    private floor: number,
    private readonly observe: (seconds: number) => void,
    private readonly nowMs: () => number = () => performance.now(),
    private readonly capacity = 4096,
  ) {
    this.revisions = new Array<number>(capacity).fill(0);
    this.atMs = new Array<number>(capacity).fill(0);
  }

  /** The store applied up to `revision` now. */
  applied(revision: number): void {
    const last = this.size === 0 ? this.floor : (this.revisions[(this.next + this.capacity - 1) % this.capacity] as number);
    if (revision <= last) return;
    if (this.size === this.capacity) this.floor = this.revisions[this.next] as number; // evicted
    this.revisions[this.next] = revision;
    this.atMs[this.next] = this.nowMs();
    this.next = (this.next + 1) % this.capacity;
    this.size = Math.min(this.capacity, this.size + 1);
  }

  /** A batch whose newest event is at `revision` was handed to a client's connection now. */
  delivered(revision: number): void {
    if (revision <= this.floor || this.size === 0) return;
    const start = (this.next + this.capacity - this.size) % this.capacity;
    const at = (i: number): number => (start + i) % this.capacity;
    if ((this.revisions[at(this.size - 1)] as number) < revision) return;
    // The first applied batch at or above `revision` applied it (the ring ascends).
    let low = 0;
    let high = this.size - 1;
    while (low < high) {
      const mid = (low + high) >> 1;
      if ((this.revisions[at(mid)] as number) < revision) low = mid + 1;
      else high = mid;
    }
    this.observe(Math.max(0, this.nowMs() - (this.atMs[at(low)] as number)) / 1000);
  }
}
