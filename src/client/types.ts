// Public types of the Baton client: options, the JSON shapes the API answers with (values are
// UTF-8 strings, as the HTTP/JSON API sends them), and the small doors the client talks through
// (an HTTP transport, a clock, a random source), which tests replace with fakes.

import type { ClientTls } from './tls-transport.js';
import type * as api from '../api/types.js';

/** The JSON form of an API shape: bytes travel as UTF-8 strings (the HTTP/JSON API's values). */
export type OnWire<T> = T extends Uint8Array
  ? string
  : T extends readonly (infer E)[]
    ? readonly OnWire<E>[]
    : T extends object
      ? { readonly [K in keyof T]: OnWire<T[K]> }
      : T;

/** One key as the API returns it. `value` is the UTF-8 decoding of the stored bytes. */
export type KeyValue = OnWire<api.KeyValue>;
/** `fencingToken` is the key's createRevision: the owner epoch to hand to protected resources. */
export type PutResult = api.PutResult;
export type RangeResult = OnWire<api.RangeResult> & { readonly consistency?: api.Consistency };
export type DeleteResult = api.DeleteResult;
export type CompareTarget = api.CompareTarget;
export type CompareOp = api.CompareOp;
export type Compare = OnWire<api.Compare>;
export type TxnOp = OnWire<api.TxnOp>;
export type TxnRequest = OnWire<api.TxnRequest>;

export interface TxnResult {
  readonly succeeded: boolean;
  readonly revision: number;
  readonly results: readonly (PutResult | RangeResult | DeleteResult)[];
}

export type MemberStatus = api.MemberStatus;
export type ClusterStatus = api.ClusterStatus;

export interface LeaseGrant {
  readonly id: number;
  /** Granted TTL in seconds. */
  readonly ttl: number;
}

/** POST /v1/leases/batch: each lease granted, or the error code that refused it. */
export interface LeaseGrantBatch {
  readonly revision: number;
  readonly leases: readonly (
    | { readonly id: number; readonly ttl: number }
    | { readonly error: string; readonly message: string }
  )[];
}

export interface LeaseKeepaliveResult {
  readonly revision: number;
  readonly leases: readonly (
    | { readonly id: number; readonly ttl: number }
    | { readonly id: number; readonly error: string }
  )[];
}

export interface LeaseInfo {
  readonly id: number;
  readonly ttl: number;
  readonly ttlMs?: number;
  readonly grantedTtl: number;
  readonly keys: readonly string[];
}

export interface LeaseListPage {
  readonly revision: number;
  /** Ascending by id. `ttl` is the remaining whole seconds. */
  readonly leases: readonly { readonly id: number; readonly ttl: number; readonly grantedTtl: number }[];
  /** More follow: ask again with `after` = the last id here. */
  readonly more: boolean;
}

export interface WatchEvent {
  readonly type: 'put' | 'delete';
  readonly kv: KeyValue;
  readonly prevKv?: KeyValue;
}

/** One batch: every matching event at or below `revision` has been delivered. */
export interface WatchBatch {
  readonly revision: number;
  readonly events: readonly WatchEvent[];
}

// ---- options ----------------------------------------------------------------------------------

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  readonly attemptsMax: number;
  /** Backoff ceiling of the first retry; doubles per attempt (full jitter below it). */
  readonly delayMsBase: number;
  readonly delayMsMax: number;
  /** No new attempt starts after this long since the first one. */
  readonly deadlineMs: number;
  /** Each attempt's own timeout (an attempt that times out is retried with the same Request-ID). */
  readonly attemptTimeoutMs: number;
}

export interface HttpRequest {
  readonly method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
  readonly timeoutMs: number;
  /** The caller gave up: abort the request (the server sees the connection close). */
  readonly signal?: AbortSignal;
}

export interface HttpAnswer {
  readonly status: number;
  /** Lower-case header names. */
  header(name: string): string | null;
  readonly text: string;
}

/** Sends one HTTP request. Throws on a network failure or timeout (the outcome is unknown). */
export type HttpTransport = (request: HttpRequest) => Promise<HttpAnswer>;

export interface ClientClock {
  /** Monotonic ms (process-wide hrtime in production): never jumps with the wall clock. */
  monotonicMs(): number;
  sleep(ms: number): Promise<void>;
}

export interface ClientOptions {
  /** Seed endpoints, e.g. ['http://127.0.0.1:7001']. Default: the dev cell (7001, 7002, 7003). */
  readonly endpoints?: readonly string[];
  /** Learn the other members from /v1/cluster/status (default true). */
  readonly discover?: boolean;
  readonly retry?: Partial<RetryPolicy>;
  /** Replaceable for tests. */
  readonly transport?: HttpTransport;
  /**
   * A cell with TLS (https:// endpoints): the CA to trust and, where the cell requires client
   * certificates, the client's certificate and key, as PEM contents (tls-transport.ts).
   */
  readonly tls?: ClientTls;
  readonly clock?: ClientClock;
  /** A number in [0, 1) (Math.random in production). */
  readonly random?: () => number;
}

export const defaultEndpoints: readonly string[] = [
  'http://127.0.0.1:7001',
  'http://127.0.0.1:7002',
  'http://127.0.0.1:7003',
];

export const defaultRetryPolicy: RetryPolicy = {
  attemptsMax: 10,
  delayMsBase: 100,
  delayMsMax: 3_000,
  deadlineMs: 30_000,
  attemptTimeoutMs: 5_000,
};
