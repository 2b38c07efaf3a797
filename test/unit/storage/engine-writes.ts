// The random write rounds the LMDB engine tests give LMDB and the memory engine alike, and the dump
// they compare the two engines' contents by.
import assert from 'node:assert/strict';
import { chance, randomInt, type Random } from '../../../src/base/random.js';
import type { KvEngine, KvRange } from '../../../src/mvcc/index.js';

/** A put, or a delete where `value` is undefined. */
export interface KeyWrite {
  readonly key: Uint8Array;
  readonly value: Uint8Array | undefined;
}

/** 1 to 30 writes on keys from `randomKey`, about 30 % deletes; a put's value names its round. */
export function randomWrites(random: Random, round: number, randomKey: (random: Random) => Uint8Array): KeyWrite[] {
  return Array.from({ length: randomInt(random, 1, 30) }, () => ({
    key: randomKey(random),
    value: chance(random, 0.3) ? undefined : Uint8Array.of(round, randomInt(random, 0, 255)),
  }));
}

/** The same writes in one write transaction on each engine. */
export function writeToEach(engines: readonly KvEngine[], writes: readonly KeyWrite[]): void {
  for (const engine of engines) {
    engine.write((writer) => {
      for (const write of writes) {
        if (write.value === undefined) writer.delete(write.key);
        else writer.put(write.key, write.value);
      }
    });
  }
}

export const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

/** The entries in `range` as `key=value` in hex, in the engine's order. */
export const dump = (engine: KvEngine, range: KvRange): string[] => [...engine.range(range)].map((e) => `${hex(e.key)}=${hex(e.value)}`);

/** `actual` holds what `expected` holds: every entry (keys up to `keyBytesMax` bytes), and a snapshot's keys in the same order. */
export function assertSameContents(actual: KvEngine, expected: KvEngine, keyBytesMax: number): void {
  const all = { start: new Uint8Array(0), end: new Uint8Array(keyBytesMax).fill(0xff) };
  assert.deepEqual(dump(actual, all), dump(expected, all));
  const snapshotKeys = (engine: KvEngine): string[] => [...engine.snapshotEntries()].map((e) => hex(e.key));
  assert.deepEqual(snapshotKeys(actual), snapshotKeys(expected));
}
