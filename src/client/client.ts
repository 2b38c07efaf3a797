// BatonClient: the entry point. Unary calls (kv, txn, leases, status) go over HTTP through
// HttpCaller (failover, same-Request-ID retries); watches and session keepalives share one
// multiplexed WebSocket (StreamConnection), and so do locks and elections (lock.ts, election.ts
// over stream-call.ts): a process keeps one connection for its session, locks and watches.
// Acquire/campaign are mutations with a Request-ID; ownership is tied to a Session's signal.
import { monotonicNowMs, systemClock } from './clock.js';
import { EndpointSet } from './endpoints.js';
import { HttpCaller, type CallAnswer, type CallRequest } from './http-caller.js';
import { fetchTransport } from './http-transport.js';
import { httpsTransport, tlsOptions, type ClientTls } from './tls-transport.js';
import { Session, type SessionOptions } from './session.js';
import { StreamConnection } from './stream-connection.js';
import {
  defaultEndpoints,
  defaultRetryPolicy,
  type ClientClock,
  type ClusterStatus,
  type DeleteResult,
  type KeyValue,
  type LeaseGrant,
  type LeaseInfo,
  type LeaseGrantBatch,
  type LeaseKeepaliveResult,
  type LeaseListPage,
  type PutResult,
  type RangeResult,
  type RetryPolicy,
  type TxnRequest,
  type TxnResult,
  type ClientOptions,
} from './types.js';
import { Watch, type WatchOptions } from './watch.js';
import type { OwnerSession } from './coordination.js';
import { Election } from './election.js';
import { Locks } from './lock.js';
import { Services } from './services.js';
import { InvalidArgumentError, KeyNotFoundError, type BatonError } from '../base/errors.js';
import { keyNameProblem } from '../base/key-name.js';

export interface MutationOptions {
  /** A caller-chosen Request-ID (e.g. kept across process restarts); default: drawn once. */
  readonly requestId?: string;
}
export interface PutOptions extends MutationOptions {
  /** 0 = create only if absent. */
  readonly ifVersion?: number;
  readonly ifRevision?: number;
  readonly lease?: number;
}
export interface GetOptions {
  readonly prefix?: boolean;
  readonly limit?: number;
  readonly revision?: number;
  readonly minRevision?: number;
  readonly consistency?: 'linearizable' | 'serializable';
  readonly keysOnly?: boolean;
  readonly countOnly?: boolean;
}
export interface CompactResult {
  readonly revision: number;
  readonly compactRevision: number;
}
export interface LeaseRevokeResult {
  readonly id: number;
  /** Keys deleted with the lease, all at `revision`. */
  readonly deleted: number;
  readonly revision: number;
}
export interface DeleteOptions extends MutationOptions {
  readonly prefix?: boolean;
  /** Required to delete prefix "/" (every key of the cell); the server refuses it otherwise. */
  readonly confirmDeleteAll?: boolean;
  readonly ifVersion?: number;
  readonly ifRevision?: number;
}

export { monotonicNowMs, systemClock };

/**
 * A client of one Baton cell.
 *
 * @example
 * const client = new BatonClient({ endpoints: ['http://127.0.0.1:7001'] });
 * const { revision } = await client.put('/config/mode', 'blue', { ifVersion: 0 });
 * const kv = await client.getValue('/config/mode');      // KeyValue | null
 * await client.close();
 */
export class BatonClient {
  readonly endpoints: EndpointSet;
  readonly retryPolicy: RetryPolicy;
  readonly clock: ClientClock;
  readonly random: () => number;
  private readonly caller: HttpCaller;
  private streamConnection: StreamConnection | null = null;
  private readonly sessions = new Set<Session>();
  private readonly watches = new Set<Watch>();
  /** Long-lived helpers (service sets, leader observers) that end with the client. */
  private readonly closers = new Set<() => void>();
  private closed = false;
  /**
   * Set by a cells client (cells-client.ts) on its per-cell clients: on wrong_cell, the owning
   * cell's client (its cache updated from the answer), or null. HTTP calls and stream requests
   * then retry there at once (HTTP once; the stream asks a later wrong_cell again after the backoff).
   */
  private redirectToCell: ((error: BatonError) => Promise<BatonClient | null>) | null = null;
  private readonly tls: ClientTls | null;

  constructor(options: ClientOptions = {}) {
    this.random = options.random ?? Math.random;
    this.clock = options.clock ?? systemClock;
    this.retryPolicy = { ...defaultRetryPolicy, ...options.retry };
    this.endpoints = new EndpointSet(options.endpoints ?? defaultEndpoints, this.random);
    const secure = options.transport === undefined && options.tls !== undefined ? httpsTransport(options.tls) : null;
    if (secure !== null) this.closers.add(secure.close);
    this.tls = options.tls ?? null;
    this.caller = new HttpCaller(
      this.endpoints,
      options.transport ?? secure?.transport ?? fetchTransport,
      this.retryPolicy,
      this.clock,
      this.random,
      options.discover ?? true,
    );
  }

  /** The wrong_cell hook set by followCells, or null (a client of one cell). */
  get cellRedirect(): ((error: BatonError) => Promise<BatonClient | null>) | null {
    return this.redirectToCell;
  }

  /**
   * Internal (cells-client.ts): wrong_cell answers go to `redirect`, which names the owning cell's
   * client; this client's own endpoints stay those of its cell.
   */
  followCells(redirect: (error: BatonError) => Promise<BatonClient | null>): void {
    this.redirectToCell = redirect;
    this.caller.redirect = async (error) => (await redirect(error))?.endpoints ?? null;
  }

  /** True once close() was called. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** The one WebSocket of this client, opened on first use. */
  get stream(): StreamConnection {
    this.streamConnection ??= new StreamConnection(this.endpoints, this.random, this.tls === null ? {} : tlsOptions(this.tls));
    return this.streamConnection;
  }

  /** Writes a key. Retried safely: every attempt carries the same Request-ID. */
  async put(key: string, value: string | Uint8Array, options: PutOptions = {}): Promise<PutResult> {
    const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
    if (options.ifVersion !== undefined) headers['if-version'] = String(options.ifVersion);
    if (options.ifRevision !== undefined) headers['if-revision'] = String(options.ifRevision);
    if (options.lease !== undefined) headers['lease-id'] = String(options.lease);
    const answer = await this.caller.call<PutResult>({
      method: 'PUT',
      path: kvPath(key),
      body: value,
      headers,
      mutation: true,
      ...requestIdOf(options),
    });
    return answer.body;
  }

  /** Reads a key or (prefix: true) a range. A single absent key throws KeyNotFoundError. */
  async get(key: string, options: GetOptions = {}): Promise<RangeResult> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(options)) {
      if (value !== undefined) query.set(name, String(value));
    }
    const suffix = query.size > 0 ? `?${query.toString()}` : '';
    return this.read<RangeResult>(kvPath(key) + suffix);
  }

  /** One key's current state, or null when absent. */
  async getValue(key: string, options: Omit<GetOptions, 'prefix'> = {}): Promise<KeyValue | null> {
    try {
      return (await this.get(key, options)).kvs[0] ?? null;
    } catch (error) {
      if (error instanceof KeyNotFoundError) return null;
      throw error;
    }
  }

  async delete(key: string, options: DeleteOptions = {}): Promise<DeleteResult> {
    const headers: Record<string, string> = {};
    if (options.ifVersion !== undefined) headers['if-version'] = String(options.ifVersion);
    if (options.ifRevision !== undefined) headers['if-revision'] = String(options.ifRevision);
    const query = [
      ...(options.prefix === true ? ['prefix=true'] : []),
      ...(options.confirmDeleteAll === true ? ['confirmDeleteAll=true'] : []),
    ];
    const path = kvPath(key) + (query.length > 0 ? `?${query.join('&')}` : '');
    const request: CallRequest = {
      method: 'DELETE',
      path,
      headers,
      mutation: true,
      ...requestIdOf(options),
    };
    return (await this.caller.call<DeleteResult>(request)).body;
  }

  /** A transaction: one revision; `succeeded` says which branch ran. */
  async txn(request: TxnRequest, options: MutationOptions = {}): Promise<TxnResult> {
    return (await this.postJson<TxnResult>('/v1/txn', request, true, options)).body;
  }

  async status(): Promise<ClusterStatus> {
    return this.read<ClusterStatus>('/v1/cluster/status');
  }

  /** Discards history below `revision` (idempotent, so retried without a Request-ID). */
  async compact(revision: number): Promise<CompactResult> {
    const path = '/v1/maintenance/compact';
    return (await this.postJson<CompactResult>(path, { revision }, false)).body;
  }

  async leaseGrant(
    ttlSeconds: number,
    options: MutationOptions & { id?: number } = {},
  ): Promise<LeaseGrant> {
    const body = { ttl: ttlSeconds, ...(options.id !== undefined ? { id: options.id } : {}) };
    return (await this.postJson<LeaseGrant>('/v1/leases', body, true, options)).body;
  }

  /**
   * `count` leases of `ttlSeconds` in one request (1 to 1,000; POST /v1/leases/batch): each is
   * granted or refused on its own, in order. Retried with one Request-ID, so nothing is granted
   * twice. For creating many sessions at once (a service's fleet, a reconnect storm).
   */
  async leaseGrantMany(ttlSeconds: number, count: number, options: MutationOptions = {}): Promise<LeaseGrantBatch> {
    return (await this.postJson<LeaseGrantBatch>('/v1/leases/batch', { ttl: ttlSeconds, count }, true, options)).body;
  }

  /** Renews leases over HTTP (sessions renew over the stream instead). Idempotent. */
  async leaseKeepalive(ids: readonly number[]): Promise<LeaseKeepaliveResult> {
    return (await this.postJson<LeaseKeepaliveResult>('/v1/leases/keepalive', { ids }, false)).body;
  }

  async leaseTimeToLive(id: number): Promise<LeaseInfo> {
    return this.read<LeaseInfo>(`/v1/leases/${id}`);
  }

  /** One page of the cell's leases, ascending by id, after `after` (answered by the leader). */
  async leaseList(options: { after?: number; limit?: number } = {}): Promise<LeaseListPage> {
    const query = new URLSearchParams();
    if (options.after !== undefined) query.set('after', String(options.after));
    if (options.limit !== undefined) query.set('limit', String(options.limit));
    return this.read<LeaseListPage>(`/v1/leases${query.size > 0 ? `?${query.toString()}` : ''}`);
  }

  /** Revokes a lease: every attached key is deleted in one revision. */
  async leaseRevoke(id: number, options: MutationOptions = {}): Promise<LeaseRevokeResult> {
    const path = `/v1/leases/${id}`;
    const request: CallRequest = {
      method: 'DELETE',
      path,
      mutation: true,
      ...requestIdOf(options),
    };
    return (await this.caller.call<LeaseRevokeResult>(request)).body;
  }

  /** A resumable watch over the client's stream (see Watch). */
  watch(key: string, options: WatchOptions = {}): Watch {
    const forget = (): boolean => this.watches.delete(watch);
    const currentRevision = async (): Promise<number> => (await this.status()).revision;
    const watch: Watch = new Watch(this.stream, key, options, forget, currentRevision, () => this.endpoints.routed);
    this.watches.add(watch);
    return watch;
  }

  /** Grants a lease and keeps it alive over the stream (see Session). */
  async session(options: SessionOptions = {}): Promise<Session> {
    const session = await Session.start(this, options);
    this.sessions.add(session);
    session.signal.addEventListener('abort', () => this.sessions.delete(session), { once: true });
    return session;
  }

  /** The locks held by `session` (a Session or WorkerSession): acquire, state, fencing check. */
  locks(session: OwnerSession): Locks {
    return new Locks(this, session);
  }

  /** Election `name` as `session` sees it (campaign needs a session; observe/leader do not). */
  election(session: OwnerSession | null, name: string): Election {
    return new Election(this, session, name);
  }

  /** Service registration (on `session`'s lease) and discovery. */
  services(session: OwnerSession | null = null): Services {
    return new Services(this, session);
  }

  /**
   * Internal: registers a long-lived helper to be ended by close() (ended at once if the client
   * is already closed). Returns the function that forgets it.
   */
  onClose(close: () => void): () => void {
    if (this.closed) {
      close();
      return () => undefined;
    }
    this.closers.add(close);
    return () => this.closers.delete(close);
  }

  /** Closes sessions (revoking their leases), watches, service sets, observers and the stream. */
  async close(): Promise<void> {
    this.closed = true;
    for (const close of [...this.closers]) close();
    this.closers.clear();
    await Promise.allSettled([...this.sessions].map((session) => session.close()));
    // Their loops end (return) rather than wait forever on a closed connection.
    for (const watch of [...this.watches]) watch.cancel();
    this.caller.closed = true;
    this.streamConnection?.close();
    this.streamConnection = null;
  }

  /**
   * Low level: one API call with this client's failover and retry rules (locks, elections and
   * services are built on it). A mutation carries one Request-ID across all its attempts.
   */
  async request<T>(request: CallRequest): Promise<T> {
    return (await this.caller.call<T>(request)).body;
  }

  private async read<T>(path: string): Promise<T> {
    return (await this.caller.call<T>({ method: 'GET', path, mutation: false })).body;
  }

  private postJson<T>(
    path: string,
    body: unknown,
    mutation: boolean,
    options: MutationOptions = {},
  ): Promise<CallAnswer<T>> {
    return this.caller.call<T>({
      method: 'POST',
      path,
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
      mutation,
      ...requestIdOf(options),
    });
  }
}

/** `/v1/kv` + the key, percent-encoded per segment (the key's own slashes stay separators). */
export function kvPath(key: string): string {
  if (!key.startsWith('/')) throw new RangeError(`key "${key}" must begin with /`);
  // fetch resolves `.`/`..` segments, so such a key would reach another key: refuse it here too.
  const problem = keyNameProblem(key);
  if (problem !== null) throw new InvalidArgumentError(`key "${key.slice(0, 100)}" ${problem}`);
  return `/v1/kv${key.split('/').map(encodeURIComponent).join('/')}`;
}

function requestIdOf(options: MutationOptions): { requestId?: string } {
  return options.requestId === undefined ? {} : { requestId: options.requestId };
}
