// Options of the durable storage engine.
export interface LmdbEngineOptions {
  /** The state machine's directory (a node's `db/`); created if absent. */
  readonly directory: string;
  /** Upper bound of the memory map (address space, not disk); default 64 GiB. */
  readonly mapSizeBytes?: number;
  /**
   * 'synced' (default): each commit waits for fdatasync. 'deferred': commits only reach the page
   * cache; for a store that a durable log and snapshot can rebuild, because after an OS crash
   * the next open deletes the file (see boot-marker.ts). Falls back to 'synced' where the OS
   * exposes no boot id.
   */
  readonly commits?: CommitMode;
  /**
   * Deferred commits: called synchronously once a checkpoint is durable, before any later commit
   * (tests copy what is certainly on disk for power-loss images; see node/testing/fault-hooks.ts).
   */
  readonly onCheckpoint?: () => void;
  /** The current boot's id (tests; default: the OS's, null where there is none). */
  readonly bootId?: string | null;
  readonly logger?: { warn(message: string): void };
  /**
   * The store's data key (32 ASCII characters, src/keys/store-key.ts): LMDB encrypts every page
   * but the meta pages with it. Undefined: a plaintext store.
   */
  readonly encryptionKey?: string;
  /**
   * Deferred commits only: writes wait in memory (reads see them) and reach LMDB together, at
   * most `delayMs` after the first of them, or at once past `maxKeys` or `maxBytes`
   * (write-behind.ts says why). Undefined: every write() commits before it returns.
   */
  readonly writeBehind?: WriteBehindOptions;
}

export interface WriteBehindOptions {
  readonly delayMs: number;
  readonly maxKeys: number;
  readonly maxBytes: number;
}

export type CommitMode = 'synced' | 'deferred';
