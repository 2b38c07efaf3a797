// Folding scanned segments into the recovered state. Pure. Every inconsistency between files
// (a missing segment, a chain that does not continue, an index gap, entries released without a
// snapshot to cover them) is damage: it throws CorruptFileError naming the file and offset.
import { assert } from '../base/assert.js';
import { CorruptFileError } from '../base/errors.js';
import type { Entry, HardState, SnapshotMeta } from '../raft/index.js';
import { decodeEntry, decodeHardState, decodeSnapshotMeta } from './codec.js';
import { LogView } from './log-view.js';
import type { ScannedRecord, ScannedSegment } from './scan.js';
import { RecordType } from './types.js';
import { writeSealBytes } from './seal.js';

export interface ReplayResult {
  readonly hardState: HardState;
  readonly snapshotMeta: SnapshotMeta | null;
  readonly entries: readonly Entry[];
  /** The log shape the writer continues from. */
  readonly view: LogView;
}

const emptyHardState: HardState = { term: 0, vote: 0, commit: 0 };

/**
 * `restoreIndex` is the snapshot the caller restores from (default: the latest marker). It may
 * be older than the latest marker (when the newest snapshot file is damaged) as long as the log
 * still holds every entry after it; entries are returned from restoreIndex + 1.
 */
export function replaySegments(
  segments: readonly ScannedSegment[],
  restoreIndex: number | null = null,
): ReplayResult {
  const first = segments[0];
  if (first === undefined) {
    return { hardState: emptyHardState, snapshotMeta: null, entries: [], view: new LogView(0) };
  }
  checkSegmentChain(segments);
  const state = new ReplayState(first.header.firstIndex - 1);
  for (const segment of segments) {
    for (const record of segment.records) state.apply(segment.path, record);
  }
  const covered = state.snapshotMeta?.index ?? 0;
  if (state.startIsReleasedBase && state.view.startIndex > covered) {
    const reason =
      `entries ${covered + 1}..${state.view.startIndex} are missing: released segments ` +
      `held them but the latest snapshot marker is at ${covered}`;
    throw new CorruptFileError(first.path, 0, reason);
  }
  assert(state.view.startIndex >= covered, 'the writer continues after the latest snapshot');
  const floor = restoreIndex ?? covered;
  if (floor < state.entriesStart) {
    const reason =
      `restoring from a snapshot at ${floor} needs entries ${floor + 1}..${state.entriesStart}, ` +
      `which the log no longer holds (its latest snapshot marker is at ${covered})`;
    throw new CorruptFileError(first.path, 0, reason);
  }
  const entries = state.entries.slice(floor - state.entriesStart);
  const { hardState, snapshotMeta, view } = state;
  return { hardState, snapshotMeta, entries, view };
}

function checkSegmentChain(segments: readonly ScannedSegment[]): void {
  for (let k = 1; k < segments.length; k++) {
    const previous = segments[k - 1];
    const current = segments[k];
    assert(previous !== undefined && current !== undefined);
    if (current.header.seq !== previous.header.seq + 1) {
      const missing = previous.header.seq + 1;
      const reason = `segment ${missing} is missing (next is ${current.header.seq})`;
      throw new CorruptFileError(current.path, 0, reason);
    }
    if (current.header.chainSeed !== previous.lastCrc) {
      // The next segment was created only after this one was synced, so records are missing.
      const reason = 'records are missing at the end of this segment (the checksum chain breaks)';
      throw new CorruptFileError(previous.path, previous.endOffset, reason);
    }
  }
}

class ReplayState {
  hardState: HardState = emptyHardState;
  snapshotMeta: SnapshotMeta | null = null;
  entries: Entry[] = [];
  readonly view: LogView;
  // While true, the view starts where released segments ended (the first segment's firstIndex),
  // not at a snapshot: entries up to the start are gone and a snapshot marker must cover them.
  startIsReleasedBase: boolean;

  // Entries are kept from here even past compaction markers, so a caller whose newest snapshot
  // file is damaged can restore from an older one. Invariant: entriesStart <= view.startIndex.
  entriesStart: number;

  constructor(releasedBelow: number) {
    this.view = new LogView(releasedBelow);
    this.startIsReleasedBase = releasedBelow > 0;
    this.entriesStart = releasedBelow;
  }

  apply(path: string, record: ScannedRecord): void {
    const decoded = decodeRecord(record);
    if (typeof decoded === 'string') throw new CorruptFileError(path, record.offset, decoded);
    if (decoded.type === 'entry') this.applyEntry(path, record.offset, decoded.entry);
    else if (decoded.type === 'hardState') this.hardState = decoded.hardState;
    else if (decoded.type === 'snapshot') this.applySnapshot(path, record.offset, decoded.meta);
  }

  private applyEntry(path: string, offset: number, entry: Entry): void {
    if (entry.index <= this.view.startIndex && this.startIsReleasedBase) {
      // A suffix overwrite below the first segment's start: legal (those entries were not
      // committed), and the snapshot that allowed the release covers what came before.
      this.view.rebase(entry.index - 1);
      this.entries = [];
      this.entriesStart = entry.index - 1;
    }
    if (entry.index <= this.view.startIndex) {
      const start = this.view.startIndex;
      const reason = `entry ${entry.index} rewrites the log below its start ${start}`;
      throw new CorruptFileError(path, offset, reason);
    }
    if (entry.index > this.view.lastIndex + 1) {
      const reason = `index gap: entry ${entry.index} follows entry ${this.view.lastIndex}`;
      throw new CorruptFileError(path, offset, reason);
    }
    this.entries.length = entry.index - this.entriesStart - 1;
    this.entries.push(entry);
    this.view.append(entry.index, entry.term);
    assert(this.entries.length === this.view.lastIndex - this.entriesStart);
  }

  private applySnapshot(path: string, offset: number, meta: SnapshotMeta): void {
    const previous = this.snapshotMeta?.index ?? 0;
    if (meta.index < previous) {
      const reason = `snapshot marker ${meta.index} goes back from ${previous}`;
      throw new CorruptFileError(path, offset, reason);
    }
    this.snapshotMeta = meta;
    const outcome = this.view.applySnapshot(meta);
    if (outcome === 'replaced') {
      // The log was replaced by a leader's snapshot: nothing before it can be restored from.
      this.entries = [];
      this.entriesStart = meta.index;
    }
    if (outcome !== 'covered') this.startIsReleasedBase = false;
    assert(this.entriesStart <= this.view.startIndex);
    assert(this.entries.length === this.view.lastIndex - this.entriesStart);
  }
}

type DecodedRecord =
  | { readonly type: 'entry'; readonly entry: Entry }
  | { readonly type: 'hardState'; readonly hardState: HardState }
  | { readonly type: 'snapshot'; readonly meta: SnapshotMeta }
  | { readonly type: 'batch' };

function decodeRecord(record: ScannedRecord): DecodedRecord | string {
  switch (record.type) {
    case RecordType.entry: {
      const entry = decodeEntry(record.payload);
      return typeof entry === 'string' ? entry : { type: 'entry', entry };
    }
    case RecordType.hardState: {
      const hardState = decodeHardState(record.payload);
      return typeof hardState === 'string' ? hardState : { type: 'hardState', hardState };
    }
    case RecordType.batch:
      // The write's length; in a write-sealed segment also its nonce and tag (seal.ts).
      return record.payload.length === 4 || record.payload.length === 4 + writeSealBytes ? { type: 'batch' } : 'batch record has the wrong size';
    case RecordType.snapshot: {
      const meta = decodeSnapshotMeta(record.payload);
      return typeof meta === 'string' ? meta : { type: 'snapshot', meta };
    }
    default:
      return `unexpected record type ${record.type}`;
  }
}
