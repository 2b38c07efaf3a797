// etcd keys are arbitrary bytes; Baton keys are UTF-8 strings that begin with '/'. The facade maps
// etcd key K to Baton key '/' + K (K must be UTF-8): a bijection that keeps byte order, so etcd's
// prefix and [key, range_end) ranges become Baton prefixes plus, for ranges that are not a
// prefix, a byte filter at the edge. Native `/locks/a` is `locks/a` to an etcd client.
import { InvalidArgumentError, TooLargeError } from '../../base/errors.js';

const decoder = new TextDecoder('utf-8', { fatal: true });

/** The Baton key for an etcd key. */
export function batonKey(key: Uint8Array, what = 'key'): string {
  if (key.length === 0) throw new InvalidArgumentError('etcdserver: key is not provided');
  return `/${utf8(key, what)}`;
}

/** The etcd key for a Baton key (always begins with '/'). */
export function etcdKey(key: string): Buffer {
  return Buffer.from(key.slice(1), 'utf8');
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

/**
 * How to read an etcd range on Baton: a single key, or a Baton prefix, with an extra byte filter
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
    utf8(start, 'key');
    return { key: '/', prefix: true, filter: (k) => Buffer.compare(k, start) >= 0 };
  }
  if (start.length > 0 && Buffer.compare(prefixEnd(start), end) === 0) {
    return { key: batonKey(start), prefix: true, filter: null };
  }
  if (Buffer.compare(start, end) >= 0) {
    // An empty range: etcd answers nothing; a prefix nothing can match keeps the shape.
    utf8(start, 'key');
    return { key: batonKey(start.length === 0 ? Buffer.from([0]) : start), prefix: false, filter: () => false };
  }
  utf8(start, 'key');
  return { key: `/${commonUtf8Prefix(start, end)}`, prefix: true, filter: (k) => Buffer.compare(k, start) >= 0 && Buffer.compare(k, end) < 0 };
}

/** The longest common prefix of two byte strings, cut back to a whole UTF-8 character of `a`. */
function commonUtf8Prefix(a: Buffer, b: Buffer): string {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  // Back off over continuation bytes (10xxxxxx) so the cut lands on a character boundary.
  while (n > 0 && n < a.length && ((a[n] as number) & 0xc0) === 0x80) n--;
  return utf8(a.subarray(0, n), 'key');
}

/** Reads that the facade completes at the edge (sort, byte ranges) load at most this many keys. */
export const edgeScanKeysMax = 10_000;

export function checkScan(count: number): void {
  if (count > edgeScanKeysMax) {
    throw new TooLargeError('the keys a sorted, filtered or non-prefix range reads', count, edgeScanKeysMax);
  }
}
