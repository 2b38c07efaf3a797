// Options of the durable storage engine.
export interface LmdbEngineOptions {
  /** The state machine's directory (a node's `db/`); created if absent. */
  readonly directory: string;
  /** Upper bound of the memory map (address space, not disk); default 64 GiB. */
  readonly mapSizeBytes?: number;
}
