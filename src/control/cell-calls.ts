// What the mover asks of the data cells over their native HTTP API (docs/api/control.md): read a
// namespace's keys with their revisions, look up a lease's remaining TTL, send an import record.
// Each call goes to the cell's members in turn until one answers; a definite answer (2xx, 4xx but
// 429) is final, a connection failure, 429 or 5xx tries the next member.
import { UnavailableError } from '../base/errors.js';
import type { ImportedKey as KeyValue } from '../base/namespace-import.js';
import type { MapCell } from './cell-map.js';

const callTimeoutMs = 5_000;

/** A cell's definite refusal (a 4xx): retrying elsewhere would not change it. */
export class CellRefusedError extends Error {
  constructor(readonly cell: string, readonly status: number, readonly code: string, message: string) {
    super(`cell ${cell} refused (${status} ${code}): ${message}`);
  }
}

export interface NamespaceRead {
  /** The cell's revision the read was served at (linearizable). */
  readonly revision: number;
  readonly kvs: readonly KeyValue[];
}

async function call(cell: MapCell, path: string, init: RequestInit = {}): Promise<unknown> {
  let last = '';
  for (const endpoint of cell.endpoints) {
    try {
      const response = await fetch(`${endpoint}${path}`, { ...init, signal: AbortSignal.timeout(callTimeoutMs) });
      const body = (await response.json()) as Record<string, unknown>;
      if (response.ok) return body;
      const error = (body['error'] ?? {}) as { code?: string; message?: string };
      // 429 (overloaded: a leader behind on its commits) passes: the mover tries again, never aborts on it.
      if (response.status < 500 && response.status !== 429) throw new CellRefusedError(cell.id, response.status, error.code ?? '', error.message ?? '');
      last = `HTTP ${response.status}`;
    } catch (error) {
      if (error instanceof CellRefusedError) throw error;
      last = (error as Error).message;
    }
  }
  throw new UnavailableError(`cell ${cell.id} did not answer ${path.split('?')[0]}: ${last}`, { cell: cell.id });
}

/** `&exclude=...` per nested namespace (a read of a namespace's own keys). */
export function excludeQuery(nested: readonly string[]): string {
  return nested.map((n) => `&exclude=${encodeURIComponent(n)}`).join('');
}

function keyPath(prefix: string): string {
  return prefix.split('/').map(encodeURIComponent).join('/');
}

/**
 * Every key of the namespace with value, version, revisions and lease, from one read view; the
 * keys of `nested` (namespaces nested in it) left out: they are not the namespace's.
 */
export async function readNamespace(cell: MapCell, prefix: string, nested: readonly string[] = []): Promise<NamespaceRead> {
  // `fenced`: after a move's fence the source serves this read to the mover (administration) only.
  const body = (await call(cell, `/v1/kv${keyPath(prefix)}?prefix=true&encoding=base64&fenced=true${excludeQuery(nested)}`)) as {
    revision: number; more: boolean; kvs: WireKeyValue[];
  };
  if (body.more) throw new UnavailableError(`namespace ${prefix} on ${cell.id} did not fit one read: too large to move in this version`);
  return { revision: body.revision, kvs: body.kvs.map(fromWire) };
}

export interface NamespacePage extends NamespaceRead {
  /** Another key of the namespace follows the page's last. */
  readonly more: boolean;
}

/**
 * At most `limit` of the namespace's own keys after `after` (null: from its first), read at the
 * cell's current revision (administration, as readNamespace). A source of an older build refuses
 * the parameters (400 unknown query parameter): the caller reads it whole instead.
 */
export async function readNamespacePage(cell: MapCell, prefix: string, nested: readonly string[], after: string | null, limit: number): Promise<NamespacePage> {
  const from = after === null ? '' : `&after=${encodeURIComponent(after)}`;
  const body = (await call(cell, `/v1/kv${keyPath(prefix)}?prefix=true&encoding=base64&fenced=true&paged=true&limit=${limit}${from}${excludeQuery(nested)}`)) as {
    revision: number; more: boolean; kvs: WireKeyValue[];
  };
  return { revision: body.revision, more: body.more, kvs: body.kvs.map(fromWire) };
}

type WireKeyValue = { key: string; value: string; version: number; createRevision: number; modRevision: number; lease: number };

function fromWire(kv: WireKeyValue): KeyValue {
  return {
    key: Buffer.from(kv.key, 'base64').toString('utf8'),
    value: new Uint8Array(Buffer.from(kv.value, 'base64')),
    version: kv.version, createRevision: kv.createRevision, modRevision: kv.modRevision, lease: kv.lease,
  };
}

/**
 * A lease's granted TTL, remaining time and origin on `cell` (null: gone, e.g. expired meanwhile).
 * The origin is the cell that granted it: `cell` itself unless a move brought it there.
 */
export async function readLease(cell: MapCell, id: number): Promise<{ id: number; ttlMs: number; remainingMs: number; origin: string } | null> {
  try {
    const body = (await call(cell, `/v1/leases/${id}`)) as { ttlMs: number; grantedTtl: number; origin?: unknown };
    const origin = typeof body.origin === 'string' && body.origin.length > 0 ? body.origin : cell.id;
    return { id, ttlMs: Math.round(body.grantedTtl * 1000), remainingMs: Math.max(1, body.ttlMs), origin };
  } catch (error) {
    if (error instanceof CellRefusedError && error.code === 'lease_not_found') return null;
    throw error;
  }
}

/** Proposes an import record (src/mvcc/import-keys.ts) on `cell`. */
export async function sendImport(cell: MapCell, record: Uint8Array): Promise<{ imported: number; revision: number }> {
  return (await call(cell, '/v1/cluster/import', {
    method: 'POST', body: record, headers: { 'content-type': 'application/json' },
  })) as { imported: number; revision: number };
}

/**
 * The cell with its leader's endpoint first (its status names it), so that proposals skip the
 * forwarding hop and the mover's watch hears the leader's applies first; unchanged if unknown.
 */
export async function leaderFirst(cell: MapCell): Promise<MapCell> {
  for (const endpoint of cell.endpoints) {
    try {
      const response = await fetch(`${endpoint}/v1/cluster/status`, { signal: AbortSignal.timeout(1_000) });
      const status = (await response.json()) as { leader?: number; members?: { id: number; clientUrl: string }[] };
      const leader = status.members?.find((m) => m.id === status.leader)?.clientUrl;
      if (leader !== undefined && cell.endpoints.includes(leader)) return { ...cell, endpoints: [leader, ...cell.endpoints.filter((e) => e !== leader)] };
    } catch {
      // the next member
    }
  }
  return cell;
}

export interface WireRequest {
  /** Request-ID and dedup record, base64, as the source stores them; its stamp. */
  readonly id: string;
  readonly record: string;
  readonly stampMs: number;
  /** How far the source's dedup clock was past the stamp (absent from older sources): the destination re-stamps by it. */
  readonly ageMs?: number;
}

/** Every dedup record of the namespace's requests stamped at `sinceMs` or later (all pages). */
export async function readNamespaceRequests(cell: MapCell, prefix: string, sinceMs: number): Promise<WireRequest[]> {
  const all: WireRequest[] = [];
  let after: string | null = null;
  for (let page = 0; page < 1_000; page++) {
    const query: string = `prefix=${encodeURIComponent(prefix)}&sinceMs=${sinceMs}${after === null ? '' : `&after=${encodeURIComponent(after)}`}`;
    const body = (await call(cell, `/v1/cluster/namespace-requests?${query}`)) as { requests: WireRequest[]; next: string | null };
    all.push(...body.requests);
    if (body.next === null) return all;
    after = body.next;
  }
  throw new UnavailableError(`the dedup records of ${prefix} on ${cell.id} did not end in 1,000 pages`);
}

/** The cell's ownership table as it applied it (linearizable), or null if it was never given one. */
export async function readOwnershipTable(cell: MapCell): Promise<{
  cell: string; epoch: number; namespaces: { prefix: string; cell: string; epoch: number; landingFrom?: string; fencedTo?: string }[];
} | null> {
  const body = (await call(cell, '/v1/cluster/ownership')) as { table: unknown };
  return (body.table ?? null) as Awaited<ReturnType<typeof readOwnershipTable>>;
}

/**
 * The cell's dedup clock as of a linearizable read (Request-ID records it stamps after are at or
 * above it), or null from a build that does not say.
 */
export async function readDedupClock(cell: MapCell): Promise<number | null> {
  const body = (await call(cell, '/v1/cluster/ownership')) as { dedupClockMs?: unknown };
  return typeof body.dedupClockMs === 'number' && Number.isSafeInteger(body.dedupClockMs) && body.dedupClockMs >= 0 ? body.dedupClockMs : null;
}

/**
 * Everything the mover asks of the data cells, as one interface: these HTTP calls in a node, and
 * calls into simulated cells in the simulator's cells world (src/sim/cells), which drives the
 * same Mover.
 */
export interface CellCalls {
  /** The whole namespace in one answer (a source of a build without pages). */
  readNamespace(cell: MapCell, prefix: string, nested?: readonly string[]): Promise<NamespaceRead>;
  readNamespacePage(cell: MapCell, prefix: string, nested: readonly string[], after: string | null, limit: number): Promise<NamespacePage>;
  readLease(cell: MapCell, id: number): Promise<{ id: number; ttlMs: number; remainingMs: number; origin: string } | null>;
  sendImport(cell: MapCell, record: Uint8Array): Promise<{ imported: number; revision: number }>;
  leaderFirst(cell: MapCell): Promise<MapCell>;
  readNamespaceRequests(cell: MapCell, prefix: string, sinceMs: number): Promise<WireRequest[]>;
  readOwnershipTable(cell: MapCell): ReturnType<typeof readOwnershipTable>;
  readDedupClock(cell: MapCell): Promise<number | null>;
}

export const httpCellCalls: CellCalls = { readNamespace, readNamespacePage, readLease, sendImport, leaderFirst, readNamespaceRequests, readOwnershipTable, readDedupClock };
