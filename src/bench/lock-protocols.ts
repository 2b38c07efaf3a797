// How the lock bench spells leases and locks for each system, over the same HTTP/1.1 JSON client:
// Baton's native API (POST /v1/locks/{name}/acquire|release), etcd 3.4's lock service through its
// v3 JSON gateway (POST /v3/lock/lock|unlock: etcd's v3 `concurrency` Mutex on the server side).
// Lease IDs stay strings: etcd's are int64 and lose precision as JavaScript numbers.
import type { RequestSpec, SystemName } from './protocols.js';

export interface LockProtocol {
  readonly system: SystemName;
  grantLease(ttlSeconds: number): RequestSpec;
  leaseId(body: Buffer): string;
  /** Queue for the lock; Baton waits at most `waitMs` (etcd's lock service has no wait limit). */
  acquire(name: string, lease: string, waitMs: number): RequestSpec;
  /** The key of the granted entry, as release wants it back. */
  acquiredKey(body: Buffer): string;
  release(name: string, key: string): RequestSpec;
  /** Counts the lock's entries (holder + waiters). */
  countEntries(name: string): RequestSpec;
  entryCount(body: Buffer): number;
}

const json = 'application/json';

function post(path: string, body: unknown): RequestSpec {
  return { method: 'POST', path, body: Buffer.from(JSON.stringify(body)), contentType: json };
}

function parse(body: Buffer): Record<string, unknown> {
  return JSON.parse(body.toString('utf8')) as Record<string, unknown>;
}

function field(answer: Record<string, unknown>, name: string): unknown {
  const value = answer[name];
  if (value === undefined) throw new Error(`answer without "${name}": ${JSON.stringify(answer).slice(0, 200)}`);
  return value;
}

export const batonLocks: LockProtocol = {
  system: 'baton',
  grantLease: (ttl) => post('/v1/leases', { ttl }),
  leaseId: (body) => String(field(parse(body), 'id')),
  acquire: (name, lease, waitMs) =>
    post(`/v1/locks/${encodeURIComponent(name)}/acquire`, { lease: Number(lease), owner: 'bench', waitMs }),
  acquiredKey: (body) => String(field(parse(body), 'key')),
  release: (name, key) => post(`/v1/locks/${encodeURIComponent(name)}/release`, { key }),
  countEntries: (name) => ({
    method: 'GET',
    path: `/v1/kv/locks/${encodeURIComponent(name)}/?prefix=true&countOnly=true`,
    body: undefined,
    contentType: undefined,
  }),
  entryCount: (body) => Number(field(parse(body), 'count')),
};

export const etcdLocks: LockProtocol = {
  system: 'etcd',
  grantLease: (ttl) => post('/v3/lease/grant', { TTL: ttl }),
  leaseId: (body) => String(field(parse(body), 'ID')),
  acquire: (name, lease) => post('/v3/lock/lock', { name: b64(name), lease }),
  acquiredKey: (body) => Buffer.from(String(field(parse(body), 'key')), 'base64').toString('utf8'),
  release: (_name, key) => post('/v3/lock/unlock', { key: b64(key) }),
  // etcd's Mutex keys are `{name}/{lease hex}`: count that prefix.
  countEntries: (name) =>
    post('/v3/kv/range', { key: b64(`${name}/`), range_end: b64(`${name}0`), count_only: true }),
  // The gateway omits zero values: no "count" means 0.
  entryCount: (body) => Number(parse(body)['count'] ?? 0),
};

export function lockProtocolFor(system: SystemName): LockProtocol {
  return system === 'baton' ? batonLocks : etcdLocks;
}

function b64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}
