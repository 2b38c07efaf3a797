// Durable storage for the state machine: the LMDB KvEngine.
export { dataFileName, LmdbEngine } from './lmdb-engine.js';
export { inlineKeyBytesMax } from './long-key-bucket.js';
export type { CommitMode, LmdbEngineOptions } from './types.js';
