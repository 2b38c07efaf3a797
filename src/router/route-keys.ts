// Which keys an HTTP request of the native API names, so the router can pick the owning cell
// (docs/design/cells.md). A request that names no key (leases, cluster administration) goes to
// the namespace its Baton-Namespace header names, else the root namespace's cell.
import { InvalidArgumentError } from '../base/errors.js';
import { spanOf, type KeySpan } from '../base/namespaces.js';
import { electionKeyPrefix, lockKeyPrefix } from '../base/queue-prefixes.js';

export type RouteTarget =
  | { readonly kind: 'keys'; readonly spans: readonly KeySpan[] }
  /** Per-cell administration (members, maintenance, auth): the cell named by Baton-Cell. */
  | { readonly kind: 'cell' };

/** The raw path (still percent-encoded), the query and the buffered body of a request. */
export function routeTarget(path: string, query: URLSearchParams, body: Buffer, headers: { [name: string]: string | string[] | undefined }): RouteTarget {
  if (path.startsWith('/v1/kv/')) {
    const key = decodePath(path.slice('/v1/kv'.length));
    return { kind: 'keys', spans: [spanOf({ key, prefix: flag(query, 'prefix') })] };
  }
  if (path === '/v1/txn') return { kind: 'keys', spans: txnSpans(body, query.get('encoding') === 'base64') };
  if (path === '/v1/watch') {
    return { kind: 'keys', spans: [spanOf({ key: query.get('key') ?? '/', prefix: flag(query, 'prefix') })] };
  }
  const lock = /^\/v1\/(locks|elections)\/([^/]+)/.exec(path);
  if (lock !== null) {
    const name = decodePath(lock[2] as string);
    const prefix = lock[1] === 'locks' ? lockKeyPrefix(name) : electionKeyPrefix(name);
    return { kind: 'keys', spans: [spanOf({ key: prefix, prefix: true })] };
  }
  if (path.startsWith('/v1/leases') || path === '/v1/fencing/check') {
    const header = headers['baton-namespace'];
    return { kind: 'keys', spans: [{ start: typeof header === 'string' && header.startsWith('/') ? header : '/', end: null }] };
  }
  return { kind: 'cell' };
}

function txnSpans(body: Buffer, base64: boolean): KeySpan[] {
  let json: { compare?: unknown; success?: unknown; failure?: unknown };
  try {
    json = JSON.parse(body.toString('utf8')) as typeof json;
  } catch {
    throw new InvalidArgumentError('the txn body must be JSON');
  }
  return txnSpansOf(json, base64);
}

/** Every key a txn names (compares and both branches): a POST /v1/txn body or a stream txn frame. */
export function txnSpansOf(json: { compare?: unknown; success?: unknown; failure?: unknown }, base64: boolean): KeySpan[] {
  const keyOf = (value: unknown): string => {
    if (typeof value !== 'string') throw new InvalidArgumentError('every txn key must be a string');
    return base64 ? Buffer.from(value, 'base64').toString('utf8') : value;
  };
  const spans: KeySpan[] = [];
  for (const compare of Array.isArray(json.compare) ? json.compare : []) spans.push({ start: keyOf((compare as { key?: unknown }).key), end: null });
  for (const branch of [json.success, json.failure]) {
    for (const op of Array.isArray(branch) ? branch : []) {
      const inner = Object.values((op ?? {}) as Record<string, { key?: unknown; prefix?: unknown }>)[0] ?? {};
      spans.push(spanOf({ key: keyOf(inner.key), prefix: inner.prefix === true }));
    }
  }
  return spans;
}

/** As the cells read a flag: `?prefix` and `?prefix=true` are on (the cell judges anything else). */
function flag(query: URLSearchParams, name: string): boolean {
  const value = query.get(name);
  return value === '' || value === 'true';
}

function decodePath(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new InvalidArgumentError('the key in the path is not valid percent-encoding');
  }
}
