// Durable storage for the state machine: the LMDB KvEngine.
export { dataFileName, LmdbEngine, defaultMapSizeBytes } from './lmdb-engine.js';
export { inlineKeyBytesMax } from './long-key-bucket.js';
export type { CommitMode, LmdbEngineOptions } from './types.js';
export { currentBootId } from './boot-marker.js';
