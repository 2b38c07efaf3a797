// Request-ID records in both store formats: every outcome a varied log produces (every command,
// every error class) decodes to exactly what was recorded, field order included, so a retry's
// answer is the first answer; a format-1 record's content form is the format-2 record of the same
// outcome; odd results fall back to the generic value and still round-trip; format 2 is small.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EntryType } from '../../../src/raft/types.js';
import { requestFingerprint } from '../../../src/mvcc/dedup.js';
import {
  canonicalDedupRecord,
  decodeDedupRecord,
  encodeDedupRecord,
  type DedupRecord,
  type StoredOutcome,
} from '../../../src/mvcc/dedup-record.js';
import { MemoryEngine, MvccStore, decodeCommand } from '../../../src/mvcc/index.js';
import type { CommandResult, MvccLimits, StoreFormat } from '../../../src/mvcc/index.js';
import { projectRoot } from '../project-root.js';

const formats: readonly StoreFormat[] = [1, 2];

/** What a client would see: JSON with bytes as hex, errors by class, code, message, details. */
function seen(outcome: StoredOutcome): string {
  return JSON.stringify(outcome, function (name, field: unknown) {
    const raw = (this as Record<string, unknown>)[name];
    if (raw instanceof Uint8Array) return { hex: Buffer.from(raw).toString('hex') };
    if (raw instanceof Error) return { class: raw.constructor.name, ...raw, message: raw.message };
    return field;
  });
}

function roundTrip(record: DedupRecord): void {
  const compact = encodeDedupRecord(record, 2);
  for (const format of formats) {
    const bytes = encodeDedupRecord(record, format);
    const back = decodeDedupRecord(bytes);
    assert.equal(back.stampMs, record.stampMs);
    assert.deepEqual(back.request, record.request);
    assert.equal(seen(back.outcome), seen(record.outcome), `format ${format}`);
    assert.deepEqual(canonicalDedupRecord(bytes), compact, 'the content form is format 2');
  }
}

test('every outcome of a varied log round-trips in both formats, field order and error class included', () => {
  const directory = join(projectRoot(import.meta.url, 'package.json'), 'test/fixtures/mvcc-format1');
  const fixture = JSON.parse(readFileSync(join(directory, 'fixture.json'), 'utf8')) as {
    limits: MvccLimits;
    entries: { index: number; term: number; data: string }[];
  };
  const store = new MvccStore(new MemoryEngine(), fixture.limits);
  const kinds = new Set<string>();
  for (const raw of fixture.entries) {
    const data = new Uint8Array(Buffer.from(raw.data, 'base64'));
    const [outcome] = store.applyBatch([{ index: raw.index, term: raw.term, type: EntryType.normal, data }]);
    if (outcome === undefined || outcome.type === 'noop') continue;
    // A reused Request-ID's refusal is computed at lookup, never recorded.
    if (outcome.type === 'failed' && outcome.error.code === 'request_id_reused') continue;
    const stored: StoredOutcome = outcome.type === 'applied' ? { ok: true, result: outcome.result } : { ok: false, error: outcome.error };
    let request;
    try {
      request = requestFingerprint(decodeCommand(data, fixture.limits).op);
    } catch {
      request = undefined; // a malformed entry: recorded without a fingerprint here
    }
    kinds.add(outcome.type === 'applied' ? outcome.result.type : outcome.error.constructor.name);
    roundTrip({ stampMs: 1_700_000_000_000 + raw.index, outcome: stored, ...(request === undefined ? {} : { request }) });
  }
  for (const kind of ['put', 'delete', 'txn', 'compact', 'leaseGrant', 'leaseRevoke', 'leaseCheckpoint', 'seqCreate',
    'deleteLeaseKeys', 'PreconditionFailedError', 'LeaseNotFoundError', 'LockHeldError', 'LockNotHeldError',
    'InvalidArgumentError', 'CompactedError']) {
    assert.ok(kinds.has(kind), `the log has a ${kind}`);
  }
});

test('results outside the fixed shapes round-trip as values', () => {
  const odd = [
    { type: 'put', created: true, version: 2, revision: 9, fencingToken: 9 },
    { type: 'put', created: false, version: 2, revision: 9, fencingToken: 10 },
    { type: 'put', created: false, version: 2, revision: 9, fencingToken: 3, extra: 'x' },
    { type: 'put', version: 2, created: false, revision: 9, fencingToken: 3 },
    { type: 'delete', deleted: -1, revision: 2 },
    { type: 'delete', deleted: 1.5, revision: 2, why: null, no: undefined },
    { type: 'get', revision: 4, count: 1, more: false, kvs: [{ key: '/é\u0000', value: Uint8Array.of(0, 255), version: 1, createRevision: 4, modRevision: 4, lease: 0 }] },
    { type: 'txn', succeeded: true, revision: 2 ** 53 - 1, results: [], ['__proto__']: 'field', 'not a word': [1, 'two', [true, -3.25]] },
  ] as unknown as CommandResult[];
  for (const result of odd) roundTrip({ stampMs: 5, outcome: { ok: true, result } });
});

test('format 2 is small: a created put with its fingerprint and a 34-byte key in 51 bytes', () => {
  const key = '/svc/payments---/instance-00000000';
  const record: DedupRecord = {
    stampMs: 1_700_000_000_000,
    outcome: { ok: true, result: { type: 'put', created: true, version: 1, revision: 123_456, fencingToken: 123_456 } },
    request: { kind: 'put', key, digest: '0a1b2c3d' },
  };
  assert.equal(encodeDedupRecord(record, 2).length, 51);
  assert.ok(encodeDedupRecord(record, 1).length > 150);
  const update = { ...record, outcome: { ok: true as const, result: { type: 'put' as const, created: false, version: 7, revision: 123_456, fencingToken: 100 } } };
  assert.equal(encodeDedupRecord(update, 2).length, 51 + 1 + 3);
  roundTrip(update);
});

test('a batch grant\'s answer (issue 31) takes its own shape: ~4 bytes a lease, read back exactly', () => {
  const leases = Array.from({ length: 1000 }, (_, i) => ({ id: 100_000 + i, ttlMs: 600_000 }));
  const record: DedupRecord = {
    stampMs: 1_700_000_000_000,
    outcome: { ok: true, result: { type: 'leaseGrantBatch', leases, revision: 77 } },
    request: { kind: 'leaseGrantBatch', key: null, digest: '0a1b2c3d' },
  };
  const bytes = encodeDedupRecord(record, 2);
  assert.ok(bytes.length < 7 * 1000, `${bytes.length} bytes for 1,000 leases`);
  roundTrip(record);
  // Anything else named leaseGrantBatch still round-trips, as a value.
  const odd = [
    { type: 'leaseGrantBatch', leases: [{ id: 1, ttlMs: 5_000, extra: 1 }], revision: 3 },
    { type: 'leaseGrantBatch', revision: 3, leases: [] },
    { type: 'leaseGrantBatch', leases: [{ id: -1, ttlMs: 5_000 }], revision: 3 },
  ] as unknown as CommandResult[];
  for (const result of odd) roundTrip({ stampMs: 5, outcome: { ok: true, result } });
});
