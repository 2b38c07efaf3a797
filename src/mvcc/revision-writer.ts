// Writes one revision's changes: each put or delete updates the current table, the lease index,
// and appends an event to history plus its per-key revision-index entry. A command that changes
// nothing leaves the revision where it was. A key created or deleted moves the batch's live-key
// tally (the store's etcd_debugging_mvcc_keys_total: live-keys.ts).
import { assert } from '../base/assert.js';
import { emptyBytes, u64Bytes } from './bytes.js';
import { currentKey, historyKey, leaseKey, revisionIndexKey, revisionIndexValue } from './layout.js';
import { adjustLeaseKeyCount } from './lease-state.js';
import { decodeRecord, encodeEventScratch, encodeRecordScratch, tombstone } from './records.js';
import type { KeyValue, KvWriter, MvccEvent, StoreFormat } from './types.js';
import type { TenantRecord } from '../base/tenants.js';
import { accountKeyChange } from './tenant-usage.js';
import { noTally, type LiveKeyTally } from './live-keys.js';

export class RevisionWriter {
  /** Events written so far in this revision; their seq is their position. */
  private eventCount = 0;

  /** The store format this command writes (its meta's). */
  get storeFormat(): StoreFormat {
    return this.format;
  }

  constructor(
    readonly writer: KvWriter,
    /** The cell revision before this command. */
    readonly baseRevision: number,
    /** What the store writes (its meta's): every member writes the same bytes. */
    private readonly format: StoreFormat,
    /** The tenant table of this state (#28: every write counts to its tenant); the store keeps it decoded. */
    readonly tenantTable: readonly TenantRecord[],
    /** Where a key created (+1) or deleted (-1) is counted; kept in memory by the store. */
    private readonly liveKeys: LiveKeyTally = noTally(),
  ) {
    u64Bytes(baseRevision + 1); // asserts the next revision is representable
  }

  get revision(): number {
    return this.baseRevision + 1;
  }

  /** The revision the command ends at: the next one only if something changed. */
  get finalRevision(): number {
    return this.eventCount > 0 ? this.revision : this.baseRevision;
  }

  current(keyBytes: Uint8Array, key: string): KeyValue | null {
    const stored = this.writer.get(currentKey(keyBytes));
    return stored === undefined ? null : decodeRecord(key, stored);
  }

  /** `prev`: the key's current record when the caller has just read it (saves a second read). */
  put(
    keyBytes: Uint8Array,
    update: { key: string; value: Uint8Array; lease: number },
    prev: KeyValue | null = this.current(keyBytes, update.key),
  ): KeyValue {
    assert(prev === null || prev.modRevision < this.revision, 'one write per key per revision');
    const kv: KeyValue = {
      key: update.key,
      value: update.value,
      version: prev === null ? 1 : prev.version + 1,
      createRevision: prev === null ? this.revision : prev.createRevision,
      modRevision: this.revision,
      lease: update.lease,
    };
    this.writer.put(currentKey(keyBytes), encodeRecordScratch(kv, this.format));
    if (prev === null) this.liveKeys.delta++;
    if (prev !== null && prev.lease !== 0 && prev.lease !== kv.lease) {
      this.writer.delete(leaseKey(prev.lease, keyBytes));
      adjustLeaseKeyCount(this.writer, prev.lease, -1);
    }
    if (kv.lease !== 0 && prev?.lease !== kv.lease) {
      this.writer.put(leaseKey(kv.lease, keyBytes), emptyBytes);
      adjustLeaseKeyCount(this.writer, kv.lease, 1);
    }
    this.appendEvent(keyBytes, { type: 'put', revision: this.revision, kv, prevKv: prev });
    accountKeyChange(this.writer, this.tenants(), kv.key, prev === null ? null : { bytes: prev.value.length, lease: prev.lease },
      { bytes: kv.value.length, lease: kv.lease });
    return kv;
  }

  /** Returns false when the key was absent (no event). */
  delete(keyBytes: Uint8Array, key: string): boolean {
    const prev = this.current(keyBytes, key);
    if (prev === null) return false;
    assert(prev.modRevision < this.revision, 'one write per key per revision');
    this.writer.delete(currentKey(keyBytes));
    this.liveKeys.delta--;
    if (prev.lease !== 0) {
      this.writer.delete(leaseKey(prev.lease, keyBytes));
      adjustLeaseKeyCount(this.writer, prev.lease, -1);
    }
    const kv = tombstone(key, this.revision);
    this.appendEvent(keyBytes, { type: 'delete', revision: this.revision, kv, prevKv: prev });
    accountKeyChange(this.writer, this.tenants(), key, { bytes: prev.value.length, lease: prev.lease }, null);
    return true;
  }

  private tenants(): readonly TenantRecord[] {
    return this.tenantTable;
  }

  private appendEvent(keyBytes: Uint8Array, event: MvccEvent): void {
    const seq = this.eventCount++;
    this.writer.put(historyKey(event.revision, seq), encodeEventScratch(event, keyBytes, this.format));
    this.writer.put(revisionIndexKey(keyBytes, event.revision), revisionIndexValue(seq, this.format));
  }
}
