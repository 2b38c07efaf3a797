// Seeded draws for the generator: every case comes from its own SeededRandom (seed, index), so
// one case replays alone (`--only INDEX`) exactly as it ran inside the whole run.
import { SeededRandom, randomInt } from '../base/random.js';

export class Draw {
  constructor(readonly random: SeededRandom) {}

  static forCase(seed: bigint, index: number): Draw {
    return new Draw(new SeededRandom(BigInt.asUintN(64, seed * 0x100000001b3n + BigInt(index) * 0x9e3779b97f4a7c15n)));
  }

  int(min: number, max: number): number {
    return randomInt(this.random, min, max);
  }

  chance(probability: number): boolean {
    return this.random.uint32() / 0x1_0000_0000 < probability;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)] as T;
  }

  /** Up to `max` distinct items of `items`, in their order. */
  some<T>(items: readonly T[], max: number): T[] {
    const count = this.int(0, Math.min(max, items.length));
    const chosen = new Set<number>();
    while (chosen.size < count) chosen.add(this.int(0, items.length - 1));
    return [...chosen].sort((a, b) => a - b).map((i) => items[i] as T);
  }

  bytes(length: number): Buffer {
    const out = Buffer.alloc(length);
    for (let i = 0; i < length; i++) out[i] = this.random.uint32() & 0xff;
    return out;
  }

  /** Printable ASCII, `length` characters. */
  text(length: number): string {
    let out = '';
    for (let i = 0; i < length; i++) out += String.fromCharCode(this.int(0x21, 0x7e));
    return out;
  }
}
