// The one definition of a key name, shared by every entry point (HTTP paths and bodies, stream
// frames, the etcd gRPC facade, the client and the CLI). Keys are strings compared as bytes and
// never resolved like paths: a `.` or `..` segment would mean one key to an API that keeps it
// literally (a txn body) and another to anything that parses URLs (WHATWG URL, fetch, proxies
// and curl without --path-as-is remove dot segments, `%2E%2E` included). So such keys are
// refused everywhere rather than kept: no request can name one key and land on another.
// See docs/api/README.md ("Keys").

import { hasNonCanonicalEscapes } from './key-bytes.js';

/** A segment that URL parsing resolves: `.` or `..`, literal or percent-encoded (`%2e`, `.%2E`). */
const dotSegment = /^(?:\.|%2e){1,2}$/i;

/** Why `key` is not a key name (a sentence naming the segment), or null when it is one. */
export function keyNameProblem(key: string): string | null {
  if (!key.startsWith('/')) return 'must begin with /';
  if (hasNonCanonicalEscapes(key)) {
    return 'must not use the characters U+F780..U+F7FF except as the escapes of non-UTF-8 etcd key bytes (docs/etcd-compat.md, Keys)';
  }
  // Cheap first: most keys have no dot right after a slash.
  if (!key.includes('/.')) return null;
  for (const segment of key.split('/')) {
    if (segment === '.' || segment === '..') {
      return `must not have a "${segment}" segment (keys are never resolved like paths)`;
    }
  }
  return null;
}

/** Whether a raw (still percent-encoded) URL path segment is one that URL parsing resolves. */
export function isDotSegment(rawSegment: string): boolean {
  return dotSegment.test(rawSegment);
}
