// Watches over a node's applied state: ordered, resumable, bounded (issue 8, api.md Watches).
export { WatchHub } from './hub.js';
export { WatchConnection } from './connection.js';
export type { WatchStepper } from './connection.js';
export { Watcher } from './watcher.js';
export type { WatcherState, WatcherOwner } from './watcher.js';
export { readHistory, watchMatches, eventBytes } from './history.js';
export type { HistoryChunk } from './history.js';
export { defaultWatchLimits } from './types.js';
export { TenantWatchAccount, TenantWatchQuotas } from './tenant-quotas.js';
export type { TenantWatchDeps } from './tenant-quotas.js';
export type {
  WatchBatch,
  WatchBugs,
  WatchNamespaces,
  WatchEndReason,
  WatchFilter,
  WatchLimits,
  WatchOutput,
  WatchSource,
  WatchSpec,
} from './types.js';
