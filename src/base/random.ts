// Seeded randomness for the deterministic core and the simulator. The core never calls
// Math.random: every random draw goes through a Random, so a seed replays a run exactly.
export interface Random {
  /** A uniformly distributed unsigned 32-bit integer. */
  uint32(): number;
}

/** xoshiro128** seeded through splitmix64: fast, small state, good statistical quality. */
export class SeededRandom implements Random {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: bigint) {
    let x = BigInt.asUintN(64, seed);
    const next = (): number => {
      x = BigInt.asUintN(64, x + 0x9e3779b97f4a7c15n);
      let z = x;
      z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
      z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
      z = z ^ (z >> 31n);
      return Number(z & 0xffffffffn);
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  uint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** A child generator whose stream does not depend on how much the parent is used later. */
  fork(label: number): SeededRandom {
    const hi = BigInt(this.uint32());
    const lo = BigInt(this.uint32());
    return new SeededRandom((hi << 32n) | lo ^ BigInt(label >>> 0));
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/** Integer in [min, max] inclusive. */
export function randomInt(random: Random, min: number, max: number): number {
  const span = max - min + 1;
  return min + Math.floor((random.uint32() / 0x1_0000_0000) * span);
}

/** True with probability p. */
export function chance(random: Random, p: number): boolean {
  return random.uint32() / 0x1_0000_0000 < p;
}

export function pick<T>(random: Random, items: readonly T[]): T {
  if (items.length === 0) throw new RangeError('pick from an empty list');
  return items[randomInt(random, 0, items.length - 1)] as T;
}
