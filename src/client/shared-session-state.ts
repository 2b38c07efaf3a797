// The shared memory between a WorkerSession (main thread) and its worker: the worker writes,
// the main thread reads synchronously with Atomics, even right after a long synchronous stall.
// safeUntil is stored in microseconds of the process-wide monotonic clock (monotonicNowMs), the
// one clock that reads the same in every thread.

export const sessionStates = { starting: 0, alive: 1, lost: 2, closed: 3 } as const;
export type SessionStateCode = (typeof sessionStates)[keyof typeof sessionStates];

/** Layout: BigInt64 [0] safeUntil µs, [1] lease ID; then Int32 [0] state, [1] renewals. */
const bigSlots = 2;
const intSlots = 2;
export const sharedSessionBytes = bigSlots * 8 + intSlots * 4;

export class SharedSessionState {
  private readonly big: BigInt64Array;
  private readonly ints: Int32Array;

  constructor(readonly buffer: SharedArrayBuffer) {
    if (buffer.byteLength < sharedSessionBytes) {
      throw new RangeError('shared session buffer too small');
    }
    this.big = new BigInt64Array(buffer, 0, bigSlots);
    this.ints = new Int32Array(buffer, bigSlots * 8, intSlots);
  }

  static create(): SharedSessionState {
    return new SharedSessionState(new SharedArrayBuffer(sharedSessionBytes));
  }

  get safeUntilMs(): number {
    return Number(Atomics.load(this.big, 0)) / 1_000;
  }

  set safeUntilMs(value: number) {
    Atomics.store(this.big, 0, BigInt(Math.max(0, Math.floor(value * 1_000))));
  }

  get leaseId(): number {
    return Number(Atomics.load(this.big, 1));
  }

  set leaseId(value: number) {
    Atomics.store(this.big, 1, BigInt(value));
  }

  get state(): SessionStateCode {
    return Atomics.load(this.ints, 0) as SessionStateCode;
  }

  set state(value: SessionStateCode) {
    Atomics.store(this.ints, 0, value);
  }

  get renewals(): number {
    return Atomics.load(this.ints, 1);
  }

  set renewals(value: number) {
    Atomics.store(this.ints, 1, value);
  }
}
