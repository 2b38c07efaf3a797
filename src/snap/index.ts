export { SnapshotStore } from './store.js';
export { SnapshotChunkSource } from './chunk-source.js';
export { SnapshotReceiver, receiveSnapshot } from './receiver.js';
export {
  SnapshotParser,
  SnapshotBlockEncoder,
  encodeSnapshotHead,
  isSnapshotMeta,
} from './format.js';
export { verifySnapshotFile } from './file-io.js';
export {
  snapshotFileName,
  parseSnapshotFileName,
  partialFileName,
  parsePartialFileName,
} from './file-name.js';
export { defaultSnapshotPolicy, shouldSnapshot } from './policy.js';
export { snapDefaults } from './types.js';
export type {
  SnapLogger,
  SnapshotChunk,
  SnapshotFileInfo,
  SnapshotPolicy,
  SnapshotPolicyInput,
  SnapshotStoreOptions,
} from './types.js';
export { checkBackupStream, namingFile, openBackupFile, type BackupFile, type OpenOptions } from './backup-file.js';
