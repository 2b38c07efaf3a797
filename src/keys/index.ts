export { kekBytes, kekId, keyringOf, loadKeyring, parseKeys, type Kek, type KeySource, type Keyring } from './keyring.js';
export { unwrapKey, wrapKey, WrongKeyError, type WrappedKey } from './envelope.js';
export { openStoreKey, rewrapStoreKey, storeKeyFileName, storeKeyId, type StoreKey } from './store-key.js';
export { segmentKeyId, segmentKeysOf, type SegmentKeys } from './wal-keys.js';
export { isSealedFile, openSealedFile, sealBytes, SealedFileWriter, sealedMagic, type SealedFile } from './sealed-file.js';
export { blockTagBytes, isSealedKeyJson, newBlockSealer, openBlockUnsealer, type BlockSealer, type BlockUnsealer, type SealedKeyJson } from './block-seal.js';
export { addRecordKey, dataKeyId, hasRecordKeys, openRecordKeys, recordKeyNos, removeRecordKeys, recordKeysFileName, recordKeysKekIds, recordKeysPath, type RecordKeys } from './record-keys.js';
export { RecordSealer, SealedEngine } from './sealed-engine.js';
export { readRewriteStatus, RecordRewriter, rewriteStatusFileName, rewriteStatusPath, type RewriteStatus } from './record-rewrite.js';
