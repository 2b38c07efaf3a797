// Starts automatic compaction (src/compactor) on a node: it reads the applied store, asks the
// driver whether this member leads, and proposes through the KV service's compact, the same
// write path the API's compact uses.
import { AutoCompactor } from '../compactor/index.js';
import type { Timers } from '../base/timers.js';
import type { CellService } from '../kv/cell-service.js';
import { cellWork, type MvccStore } from '../mvcc/index.js';
import type { NodeDriver } from '../driver/driver.js';
import type { NodeConfig } from './config.js';
import type { NodeLogger } from './node.js';

export function startAutoCompaction(
  config: NodeConfig,
  parts: { store: MvccStore; driver: Pick<NodeDriver<unknown>, 'status'>; cell: CellService },
  timers: Timers,
  log: NodeLogger,
): { stop(): void } {
  const policy = config.autoCompaction;
  if (policy.mode === 'off') {
    log.info('auto compaction: off (history is kept until a client compacts it)');
    return { stop: () => {} };
  }
  const { store, driver, cell } = parts;
  const compactor = new AutoCompactor(
    {
      revision: () => store.revision,
      compactRevision: () => store.compactRevision,
      isLeader: () => driver.status().role === 'leader',
      compact: (revision) => cell.compact(revision, cellWork),
    },
    { policy, revisionCheckMs: config.tuning.autoCompactionCheckMs, timers, log },
  );
  compactor.start();
  log.info(`auto compaction: ${compactor.describe()}`);
  return compactor;
}
