// Automatic compaction's settings and what it needs from the node. The caller owns the interface:
// the node passes the KV service and the driver's role in, so this folder imports only base/.

/**
 * How much history the cell keeps (etcd's --auto-compaction-mode and -retention). `periodic`:
 * revisions younger than the retention (a duration); `revision`: the last `retentionRevisions`.
 */
export type AutoCompactionPolicy =
  | { readonly mode: 'off' }
  | { readonly mode: 'periodic'; readonly retentionMs: number }
  | { readonly mode: 'revision'; readonly retentionRevisions: number };

/** What the compactor reads and proposes (the node's store, driver and KV service). */
export interface CompactorCell {
  /** The revision applied on this member. */
  revision(): number;
  /** The compaction point applied on this member: reads below it are refused. */
  compactRevision(): number;
  /** Whether this member leads now: only the leader proposes. */
  isLeader(): boolean;
  /**
   * Proposes the compact command through the one write path (CellService.compact). It settles:
   * the write path answers or times out (request timeout). CompactedError when another compaction
   * already reached `revision`.
   */
  compact(revision: number): Promise<unknown>;
}

export interface CompactorLogger {
  info(message: string): void;
  warn(message: string): void;
}
