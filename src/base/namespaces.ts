// Namespaces (docs/design/cells.md): a namespace is a key prefix ending in '/', and every key
// belongs to the longest namespace that is a prefix of it, or to the root namespace '/'. Pure
// functions shared by the state machine (ownership at apply), the control plane and the router,
// so all three resolve a key the same way.
import { keyNameProblem } from './key-name.js';

export const rootNamespace = '/';
/** Namespaces in one cell map: bounds the ownership record and every resolution's work. */
export const namespacesMax = 1_000;
/** A namespace's prefix, in UTF-8 bytes (a key prefix: well under the key limit). */
export const namespaceBytesMax = 512;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Why `prefix` is not a namespace (a sentence), or null when it is one. */
export function namespaceProblem(prefix: string): string | null {
  if (!prefix.endsWith('/')) return 'must end with /';
  const keyProblem = keyNameProblem(prefix);
  if (keyProblem !== null) return keyProblem;
  if (encoder.encode(prefix).length > namespaceBytesMax) return `must be at most ${namespaceBytesMax} bytes`;
  return null;
}

/** The namespace `key` belongs to: the longest of `prefixes` that starts it, else the root. */
export function namespaceOf(prefixes: Iterable<string>, key: string): string {
  let best = rootNamespace;
  for (const prefix of prefixes) {
    if (prefix.length > best.length && key.startsWith(prefix)) best = prefix;
  }
  return best;
}

/** The keys of a namespace are [prefix, prefixEnd): '/' is the last byte, '0' the next one. */
export function namespaceEnd(prefix: string): string {
  return `${prefix.slice(0, -1)}0`;
}

/** A key range: [start, end) in UTF-8 byte order; `end` null = the single key `start`. */
export interface KeySpan {
  readonly start: string;
  readonly end: Uint8Array | null;
}

/** The range a read or delete names: one key, a prefix (`prefix` true) or [key, rangeEnd). */
export function spanOf(request: { key: string; prefix?: boolean | undefined; rangeEnd?: Uint8Array | undefined }): KeySpan {
  if (request.rangeEnd !== undefined) return { start: request.key, end: request.rangeEnd };
  if (request.prefix === true) return { start: request.key, end: prefixEndBytes(encoder.encode(request.key)) };
  return { start: request.key, end: null };
}

/**
 * Every namespace that holds a key of `span`. Resolution is constant between the points where a
 * namespace starts or ends, so the namespaces are those of the span's first key and of every such
 * point inside the span: exact, and bounded by the number of namespaces.
 */
export function namespacesOfSpan(prefixes: readonly string[], span: KeySpan): Set<string> {
  const found = new Set([namespaceOf(prefixes, span.start)]);
  if (span.end === null) return found;
  const start = encoder.encode(span.start);
  const end = span.end;
  for (const prefix of prefixes) {
    for (const point of [prefix, namespaceEnd(prefix)]) {
      const bytes = encoder.encode(point);
      if (compareBytes(bytes, start) > 0 && compareBytes(bytes, end) < 0) found.add(namespaceOf(prefixes, point));
    }
  }
  return found;
}

/** The namespaces of `prefixes` nested in `prefix` (below it, not itself), sorted. */
export function nestedNamespaces(prefixes: Iterable<string>, prefix: string): string[] {
  return [...prefixes].filter((p) => p !== prefix && p.startsWith(prefix)).sort();
}

/**
 * A namespace's own keys as ranges: its prefix's range less the ranges of the namespaces nested
 * in it (`nested`, each under `prefix`), whose keys are theirs by the longest-prefix rule. A move
 * of the namespace copies, clears and judges these ranges only, so a nested namespace stays where
 * it is, on the source, the destination or a third cell. Each span ends (exclusive) at a nested
 * prefix or at the namespace's end; empty spans are left out.
 */
export function ownSpans(prefix: string, nested: readonly string[]): KeySpan[] {
  const holes = nested
    .filter((n) => n !== prefix && n.startsWith(prefix))
    .map((n) => ({ start: encoder.encode(n), end: encoder.encode(namespaceEnd(n)) }))
    .sort((a, b) => compareBytes(a.start, b.start));
  const spans: KeySpan[] = [];
  let from = encoder.encode(prefix);
  for (const hole of holes) {
    if (compareBytes(hole.start, from) < 0) {
      // Nested in a hole already cut (`/a/b/c/` inside `/a/b/`): its keys are skipped already.
      if (compareBytes(hole.end, from) > 0) from = hole.end;
      continue;
    }
    if (compareBytes(from, hole.start) < 0) spans.push({ start: decoder.decode(from), end: hole.start });
    from = hole.end;
  }
  const end = encoder.encode(namespaceEnd(prefix));
  if (compareBytes(from, end) < 0) spans.push({ start: decoder.decode(from), end });
  return spans;
}

/** Whether `key` is one of `prefix`'s own keys: under it and under none of `nested`. */
export function isOwnKey(prefix: string, nested: readonly string[], key: string): boolean {
  return key.startsWith(prefix) && !nested.some((n) => n !== prefix && n.startsWith(prefix) && key.startsWith(n));
}

function prefixEndBytes(prefix: Uint8Array): Uint8Array {
  const end = prefix.slice();
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] as number) < 0xff) {
      end[i] = (end[i] as number) + 1;
      return end.subarray(0, i + 1);
    }
  }
  // All 0xff: no upper bound short of the end of the key space.
  return Uint8Array.of(0xff, 0xff, 0xff, 0xff);
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}
