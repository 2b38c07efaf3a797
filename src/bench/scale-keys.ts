// The scale bench's data set (issue 22): N keys of exactly 32 bytes with 256-byte values, the
// same bytes for Baton and etcd. A key's first segment is a bijective scramble of its number, so
// keys arrive in an order unrelated to their sort order (as a real load's would: B-trees fill
// very differently under sorted inserts), and each key still names its number for the reads.
import { benchValue, defaultKeyPrefix } from './load.js';
import type { Protocol } from './protocols.js';

export const scaleKeyBytes = 32;
export const scaleValueBytes = 256;
const scalePrefix = '/scale/';
const indexDigits = 16;
/** 7 + 8 + 1 + 16 bytes. */
const keyShapeBytes = scalePrefix.length + 8 + 1 + indexDigits;
if (keyShapeBytes !== scaleKeyBytes) throw new Error('scale keys must be 32 bytes');

/** Key number i (0 <= i < 2^32): `/scale/<8 hex of a scramble of i>-<i, 16 digits>`. */
export function scaleKey(i: number): string {
  if (!(Number.isInteger(i) && i >= 0 && i < 2 ** 32)) throw new RangeError(`key number ${i}`);
  const scrambled = (Math.imul(i, 0x9e3779b1) >>> 0).toString(16).padStart(8, '0');
  return `${scalePrefix}${scrambled}-${String(i).padStart(indexDigits, '0')}`;
}

export const scaleValue: Buffer = benchValue(scaleValueBytes);

/**
 * Hands out the key numbers [start, end) with the given stride in batches of at most `batch`,
 * to any number of concurrent workers (each takes the next batch when it is free).
 */
export class KeyBatches {
  private next: number;
  constructor(
    private readonly end: number,
    private readonly batch: number,
    start = 0,
    private readonly stride = 1,
  ) {
    if (!(batch >= 1 && stride >= 1 && start >= 0)) throw new RangeError('batch and stride >= 1, start >= 0');
    this.next = start;
  }

  /** The next batch's keys, or null when every key was handed out. */
  take(): string[] | null {
    if (this.next >= this.end) return null;
    const keys: string[] = [];
    for (; keys.length < this.batch && this.next < this.end; this.next += this.stride) {
      keys.push(scaleKey(this.next));
    }
    return keys;
  }
}

/**
 * `load.ts` names its keys `${prefix}${i padded to 6}`: this wraps a protocol so that those
 * names become the scale keys of the same numbers, and the standard closed-loop put and get
 * workloads run over the keys the cell already holds.
 */
export function overScaleKeys(protocol: Protocol, prefix = defaultKeyPrefix): Protocol {
  const remap = (key: string): string => {
    if (!key.startsWith(prefix)) throw new Error(`unexpected bench key ${key}`);
    return scaleKey(Number(key.slice(prefix.length)));
  };
  return {
    system: protocol.system,
    put: (key, value) => protocol.put(remap(key), value),
    get: (key, serializable) => protocol.get(remap(key), serializable),
    cas: (key, version, value) => protocol.cas(key, version, value),
    casOutcome: (version, body) => protocol.casOutcome(version, body),
  };
}
