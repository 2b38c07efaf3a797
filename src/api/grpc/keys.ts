// etcd keys are arbitrary bytes; Baton keys are strings that begin with '/'. The facade maps
// etcd key K to Baton key '/' + K (bytes that are not UTF-8 as escapes: src/base/key-bytes.ts): a
// bijection that keeps the byte order of UTF-8 keys, so etcd's prefixes are Baton prefixes and its [key, range_end) ranges are Baton [key, rangeEnd) reads
// ('/' + range_end, any bytes: a bound, not a key). Watches and the gets inside a txn have no
// range end on Baton: they read the covering prefix with a byte filter at the edge (rangePlan).
// Native `/locks/a` is `locks/a` to an etcd client.
import { InvalidArgumentError, TooLargeError } from '../../base/errors.js';
import { bytesToKey, keyToBytes, stablePrefixKey } from '../../base/key-bytes.js';
import { keyNameProblem } from '../../base/key-name.js';

const decoder = new TextDecoder('utf-8', { fatal: true });

/** The Baton key for an etcd key. */
export function batonKey(key: Uint8Array, what = 'key'): string {
  if (key.length === 0) throw new InvalidArgumentError('etcdserver: key is not provided');
  const name = `/${bytesToKey(key)}`;
  // The native API's one key rule (src/base/key-name.ts): an etcd key with a `.` or `..`
  // segment ("a/../b") could not be named over HTTP, so the facade refuses it too.
  const problem = keyNameProblem(name);
  if (problem !== null) throw new InvalidArgumentError(`${what} ${problem} on Baton (docs/api/README.md, Keys)`);
  return name;
}

/** The etcd key for a Baton key (always begins with '/'). */
export function etcdKey(key: string): Buffer {
  return keyToBytes(key.slice(1));
}

export function utf8(bytes: Uint8Array, what: string): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new InvalidArgumentError(`${what} must be valid UTF-8 on Baton (docs/etcd-compat.md)`);
  }
}

/** etcd's prefix end: the key with its last byte below 0xff incremented, the rest dropped. */
export function prefixEnd(key: Uint8Array): Buffer {
  const end = Buffer.from(key);
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] as number) < 0xff) {
      end[i] = (end[i] as number) + 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

/** An etcd range as one Baton read: a single key, a prefix, or [key, rangeEnd). */
export interface RangeTarget {
  readonly key: string;
  readonly prefix: boolean;
  /** Exclusive bound on the Baton key's bytes; absent for a single key or a prefix. */
  readonly rangeEnd?: Uint8Array;
}

const slash = Buffer.from('/');
/** Just past '/': above every Baton key, so [key, allKeysEnd) is "every key from key on". */
const allKeysEnd = Buffer.from('0');

export function rangeTarget(key: Uint8Array, rangeEnd: Uint8Array): RangeTarget {
  if (rangeEnd.length === 0) return { key: batonKey(key), prefix: false };
  if (rangeEnd.length === 1 && rangeEnd[0] === 0) {
    // [key, +inf) (etcd's WithFromKey); key "\0" (or empty) is every key.
    if (key.length === 0 || (key.length === 1 && key[0] === 0)) return { key: '/', prefix: true };
    return { key: batonKey(key), prefix: false, rangeEnd: allKeysEnd };
  }
  if (key.length > 0 && Buffer.compare(prefixEnd(key), rangeEnd) === 0) return { key: batonKey(key), prefix: true };
  return { key: batonKey(key), prefix: false, rangeEnd: Buffer.concat([slash, rangeEnd]) };
}

/**
 * For watches and txn gets (no range end on Baton): a single key, or a Baton prefix, with an extra byte filter
 * (on the etcd key) when the range is not exactly that prefix.
 */
export interface RangePlan {
  readonly key: string;
  readonly prefix: boolean;
  /** null: every key the Baton query returns is in the range. */
  readonly filter: ((etcdKeyBytes: Buffer) => boolean) | null;
}

export function rangePlan(key: Uint8Array, rangeEnd: Uint8Array): RangePlan {
  if (rangeEnd.length === 0) return { key: batonKey(key), prefix: false, filter: null };
  const start = Buffer.from(key);
  const end = Buffer.from(rangeEnd);
  const fromKey = end.length === 1 && end[0] === 0;
  if (fromKey) {
    // [key, +inf); key "\0" (or empty) is every key.
    if (start.length === 0 || (start.length === 1 && start[0] === 0)) return { key: '/', prefix: true, filter: null };
    return { key: '/', prefix: true, filter: (k) => Buffer.compare(k, start) >= 0 };
  }
  if (start.length > 0 && Buffer.compare(prefixEnd(start), end) === 0) {
    return { key: batonKey(start), prefix: true, filter: null };
  }
  if (Buffer.compare(start, end) >= 0) {
    // An empty range: etcd answers nothing; a prefix nothing can match keeps the shape.
    return { key: batonKey(start.length === 0 ? Buffer.from([0]) : start), prefix: false, filter: () => false };
  }
  return { key: `/${commonUtf8Prefix(start, end)}`, prefix: true, filter: (k) => Buffer.compare(k, start) >= 0 && Buffer.compare(k, end) < 0 };
}

/** The key form of the longest common prefix of two byte strings that every key between them begins with. */
function commonUtf8Prefix(a: Buffer, b: Buffer): string {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return stablePrefixKey(a.subarray(0, n));
}

/** Reads that the facade completes at the edge (sort, revision filters, ranges in a txn) load at most this many keys. */
export const edgeScanKeysMax = 10_000;

export function checkScan(count: number): void {
  if (count > edgeScanKeysMax) {
    throw new TooLargeError('the keys a sorted or filtered range (or a non-prefix range in a txn) reads', count, edgeScanKeysMax);
  }
}
