// The audit log file: flushed() resolves only once every record before it is on disk (also when a
// write is under way), rotation keeps `keep` old files in order, a failed write fails every waiter
// and refuses from then on; and which applied entries are audited at all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditLog, auditRecordsOf, isAuditedCommand } from '../../../src/audit/index.js';
import { encodeCommand, defaultMvccLimits, type ApplyOutcome, type Command } from '../../../src/mvcc/index.js';
import { EntryType } from '../../../src/raft/types.js';

const lines = (path: string): { event: string }[] => readFileSync(path, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { event: string });

test('flushed() waits for the records before it, also those in a write under way', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'audit-')), 'audit.log');
  const log = await AuditLog.open({ path, member: 1, cell: 'c', maxBytes: 1 << 20, keep: 3 });
  log.record({ event: 'a', principal: '', result: 'ok' });
  const first = log.flushed();
  log.record({ event: 'b', principal: '', result: 'ok' });
  const second = log.flushed();
  await first;
  assert.ok(lines(path).some((r) => r.event === 'a'));
  await second;
  assert.deepEqual(lines(path).map((r) => r.event), ['a', 'b']);
  await log.flushed();
  await log.close();
});

test('rotation by size keeps the newest records in FILE and the older ones in FILE.1, FILE.2', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'audit-')), 'audit.log');
  const log = await AuditLog.open({ path, member: 1, cell: 'c', maxBytes: 300, keep: 2 });
  for (let i = 0; i < 12; i++) {
    log.record({ event: `e${i}`, principal: '', result: 'ok' });
    await log.flushed();
  }
  await log.close();
  assert.ok(existsSync(`${path}.1`) && existsSync(`${path}.2`) && !existsSync(`${path}.3`));
  const all = [...lines(`${path}.2`), ...lines(`${path}.1`), ...lines(path)].map((r) => r.event);
  assert.equal(all.at(-1), 'e11');
  assert.deepEqual(all, [...all].sort((a, b) => Number(a.slice(1)) - Number(b.slice(1))), 'in order across the files');
});

test('a failed write fails its waiters and every audited operation after it', async () => {
  const log = await AuditLog.open({ path: '/dev/full', member: 1, cell: 'c', maxBytes: 1 << 20, keep: 1 });
  log.record({ event: 'a', principal: '', result: 'ok' });
  await assert.rejects(log.flushed(), /audit log cannot be written/);
  assert.equal(log.failed, true);
  assert.throws(() => log.checkWritable(), (e: Error & { code?: string }) => e.code === 'unavailable');
  await log.close();
});

test('which applied entries are audited: policy, client revocations, lock deletes, compaction, membership, refusals; not puts or expiry', () => {
  const entry = (index: number, op: Command, principal?: string) => ({
    index, term: 1, type: EntryType.normal,
    data: encodeCommand({ proposedAtMs: 1, ...(principal === undefined ? {} : { principal }), op }, defaultMvccLimits),
  });
  const applied = (index: number, result: Record<string, unknown>): ApplyOutcome =>
    ({ type: 'applied', index, term: 1, duplicate: false, requestId: null, result } as unknown as ApplyOutcome);
  const entries = [
    entry(1, { type: 'put', key: '/a', value: new Uint8Array(1) }, ''),
    entry(2, { type: 'leaseRevoke', id: 7 }),
    entry(3, { type: 'leaseRevoke', id: 8 }, 'ops'),
    entry(4, { type: 'delete', key: '/locks/job/000000000005' }, 'ops'),
    entry(5, { type: 'delete', key: '/other' }, 'ops'),
    entry(6, { type: 'put', key: '/secret', value: new Uint8Array(1) }, 'mallory'),
    { index: 7, term: 1, type: EntryType.config, data: new Uint8Array(0) },
  ];
  const outcomes: ApplyOutcome[] = [
    applied(1, { type: 'put', revision: 2 }),
    applied(2, { type: 'leaseRevoke', revision: 3 }),
    applied(3, { type: 'leaseRevoke', revision: 4 }),
    applied(4, { type: 'delete', revision: 5 }),
    applied(5, { type: 'delete', revision: 6 }),
    { type: 'failed', index: 6, term: 1, duplicate: false, requestId: null, error: Object.assign(new Error('permission denied'), { code: 'permission_denied' }) } as unknown as ApplyOutcome,
    { type: 'noop', index: 7, term: 1 } as ApplyOutcome,
  ];
  const records = auditRecordsOf(entries, outcomes);
  assert.deepEqual(records.map((r) => `${r.index}:${r.event}:${r.principal}`), ['3:lease-revoke:ops', '4:lock-release:ops', '6:denied:mallory', '7:membership:null']);
  assert.equal(isAuditedCommand({ type: 'put', key: '/a', value: new Uint8Array(0) }), false);
});
