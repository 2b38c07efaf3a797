// A deliberately simple reference model of what the WAL should hold, written independently of
// src/wal: a list of entries, a hard state and a snapshot marker, changed one record at a time.
import type { Entry, HardState, SnapshotMeta } from '../../../src/raft/index.js';
import { entryKey } from './helpers.js';

export class WalModel {
  hardState: HardState = { term: 0, vote: 0, commit: 0 };
  snapshot: SnapshotMeta | null = null;
  entries: Entry[] = [];

  static from(recovered: {
    hardState: HardState;
    snapshotMeta: SnapshotMeta | null;
    entries: readonly Entry[];
  }): WalModel {
    const model = new WalModel();
    model.hardState = recovered.hardState;
    model.snapshot = recovered.snapshotMeta;
    model.entries = [...recovered.entries];
    return model;
  }

  get startIndex(): number {
    return this.snapshot?.index ?? 0;
  }

  get lastIndex(): number {
    return this.startIndex + this.entries.length;
  }

  termAt(index: number): number | undefined {
    return this.entries[index - this.startIndex - 1]?.term;
  }

  applyEntry(entry: Entry): void {
    this.entries.length = entry.index - this.startIndex - 1;
    this.entries.push(entry);
  }

  applyHardState(hardState: HardState): void {
    this.hardState = hardState;
  }

  applySnapshot(meta: SnapshotMeta): void {
    const start = this.startIndex;
    if (meta.index > start && this.termAt(meta.index) === meta.term) {
      this.entries = this.entries.slice(meta.index - start);
    } else if (meta.index > start) {
      this.entries = [];
    }
    this.snapshot = meta;
  }

  signature(): string {
    return JSON.stringify({
      hardState: this.hardState,
      snapshot: this.snapshot === null ? null : [this.snapshot.index, this.snapshot.term],
      entries: this.entries.map(entryKey),
    });
  }
}
