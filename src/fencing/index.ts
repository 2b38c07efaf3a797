// The fencing guard users embed in the resource a lock protects (see docs/client.md): keep the
// highest token accepted per resource, reject lower ones, atomically.
export type { FencingGuard, FencingVerdict } from './types.js';
export { MemoryFencingGuard } from './memory-guard.js';
export { LmdbFencingGuard } from './lmdb-guard.js';
