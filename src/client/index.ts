// The Baton client library: import from here (`baton/client` once published).
export { BatonClient, kvPath, monotonicNowMs, systemClock } from './client.js';
export type {
  CompactResult,
  DeleteOptions,
  GetOptions,
  LeaseRevokeResult,
  MutationOptions,
  PutOptions,
} from './client.js';
export { BatonCellsClient, CellLocks } from './cells-client.js';
export type { CellSessionOptions, CellsClientOptions } from './cells-client.js';
export { CellMap } from './cell-map.js';
export type { CellMapBody, MapNamespace } from './cell-map.js';
export { Session } from './session.js';
export type { SessionOptions } from './session.js';
export { WorkerSession } from './worker-session.js';
export type { WorkerSessionOptions } from './worker-session.js';
export { Lock, Locks, defaultLockWaitMs, lockWaitMsMax } from './lock.js';
export type { AcquireOptions, FencingCheckResult, LockEntry, LockState, ReleaseResult } from './lock.js';
export { Election, Leadership, LeaderObserver, electionValueBytesMax } from './election.js';
export type { CampaignOptions, LeaderInfo, LeadershipChange, ObserveOptions } from './election.js';
export { ServiceSet, Services, serviceInstancesMax, serviceMetadataBytesMax, servicePrefix } from './services.js';
export type { Registration, ServiceInstance } from './services.js';
export type { OwnerSession } from './coordination.js';
export { Watch } from './watch.js';
export type { WatchOptions } from './watch.js';
export { SafeUntil, defaultSafetyMarginMs, renewalDelayMs } from './safe-until.js';
export { backoffDelayMs, isRetryable, newRequestId, parseRetryAfterMs } from './retry.js';
export { EndpointSet } from './endpoints.js';
export { httpsTransport, type ClientTls } from './tls-transport.js';
export { HttpCaller } from './http-caller.js';
export type { CallAnswer, CallRequest } from './http-caller.js';
export { StreamConnection } from './stream-connection.js';
export { fetchTransport } from './http-transport.js';
export {
  BatonError,
  CompactedError,
  InvalidArgumentError,
  KeyNotFoundError,
  LeaseNotFoundError,
  LockHeldError,
  LockNotHeldError,
  OverloadedError,
  PreconditionFailedError,
  QuotaExceededError,
  RequestIdReusedError,
  SlowConsumerError,
  CrossCellError,
  WrongCellError,
  TooLargeError,
  TimeoutError,
  UnavailableError,
} from '../base/errors.js';
export { ClosedError, SessionLostError, UnknownCodeError, errorFromHttp, errorFromWire } from './errors.js';
export { defaultEndpoints, defaultRetryPolicy } from './types.js';
export type {
  ClientClock,
  ClientOptions,
  ClusterStatus,
  Compare,
  DeleteResult,
  HttpAnswer,
  HttpRequest,
  HttpTransport,
  KeyValue,
  LeaseGrant,
  LeaseInfo,
  LeaseGrantBatch,
  LeaseKeepaliveResult,
  LeaseListPage,
  MemberStatus,
  PutResult,
  RangeResult,
  RetryPolicy,
  TxnOp,
  TxnRequest,
  TxnResult,
  WatchBatch,
  WatchEvent,
} from './types.js';
