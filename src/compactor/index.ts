export { AutoCompactor, revisionCheckMsDefault } from './auto-compactor.js';
export type { AutoCompactorOptions } from './auto-compactor.js';
export {
  addSample,
  decideCompaction,
  periodicCandidate,
  periodicSchedule,
  revisionCandidate,
} from './plan.js';
export type { CompactionDecision, PeriodicSchedule, RevisionSample } from './plan.js';
export type { AutoCompactionPolicy, CompactorCell, CompactorLogger } from './types.js';
