// Request-IDs move with their namespace (src/mvcc/namespace-requests.ts): the source lists the
// dedup records of requests under the namespace (not those of other namespaces), a page at a
// time; the destination's import writes them; once it owns the namespace, a client's retry of a
// request the source applied is answered with the source's first outcome and applies nothing.
// Without the records the retry applies a second time (checked too: the test's teeth).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntryType } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, defaultMvccLimits, encodeCommand } from '../../../src/mvcc/index.js';
import type { ApplyOutcome, Command } from '../../../src/mvcc/index.js';
import { encodeImportRecord } from '../../../src/mvcc/import-keys.js';
import { restampImportRequests } from '../../../src/mvcc/namespace-requests.js';
import { decodeDedupRecord, encodeDedupRecord, restampDedupRecord } from '../../../src/mvcc/dedup-record.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

/** A one-member cell; its dedup clock starts at its first entry's proposal time (1,000 ms + `clockMs`). */
function cell(clockMs = 0): { store: MvccStore; apply(op: Command, requestId?: string, proposedAtMs?: number): ApplyOutcome } {
  const store = new MvccStore(new MemoryEngine());
  let index = 0;
  return {
    store,
    apply(op, requestId, proposedAtMs = clockMs + 1_000 + index + 1) {
      index++;
      const data = encodeCommand({ proposedAtMs, source: 1, op, ...(requestId === undefined ? {} : { requestId }) }, defaultMvccLimits);
      return store.applyBatch([{ index, term: 1, type: EntryType.normal, data }])[0] as ApplyOutcome;
    },
  };
}

function table(epoch: number, self: string, payOwner: string): Command {
  return {
    type: 'ownershipSet',
    record: text(JSON.stringify({
      epoch, cell: self,
      namespaces: [{ prefix: '/', cell: 'cell-1', epoch: 1 }, { prefix: '/pay/', cell: payOwner, epoch }],
      cells: [{ id: 'cell-1', endpoints: ['http://a:1'] }, { id: 'cell-2', endpoints: ['http://b:1'] }],
    })),
  };
}

const put = (key: string, value: string): Command => ({ type: 'put', key, value: text(value) });

function moveRequests(withRecords: boolean): { retried: ApplyOutcome; first: ApplyOutcome; version: number | undefined } {
  const source = cell();
  source.apply(table(2, 'cell-1', 'cell-1'));
  const first = source.apply(put('/pay/a', 'A'), 'req-pay-1');
  source.apply(put('/other', 'O'), 'req-other-1');
  for (let i = 0; i < 5; i++) source.apply(put(`/pay/k${i}`, 'x'), `req-pay-k${i}`);
  // Listed a page at a time (scanMax 3 of the 7 expiry entries per call).
  const listed: string[] = [];
  const records: { id: Uint8Array; record: Uint8Array }[] = [];
  let after: Uint8Array | null = null;
  for (let page = 0; page < 10; page++) {
    const got = source.store.namespaceRequests('/pay/', { sinceMs: 0, after, scanMax: 3 });
    for (const r of got.requests) {
      listed.push(Buffer.from(r.id).toString('utf8'));
      records.push({ id: r.id, record: r.record });
    }
    if (got.next === null) break;
    after = got.next;
  }
  assert.deepEqual(listed.sort(), ['req-pay-1', 'req-pay-k0', 'req-pay-k1', 'req-pay-k2', 'req-pay-k3', 'req-pay-k4'], 'the namespace\'s requests, not /other\'s');

  const destination = cell();
  destination.apply(table(2, 'cell-2', 'cell-1'));
  const kv = source.store.range({ type: 'get', key: '/pay/a' }).kvs[0];
  assert.ok(kv !== undefined);
  const imported = destination.apply({
    type: 'importKeys',
    record: encodeImportRecord({ prefix: '/pay/', clear: true, floor: source.store.revision, puts: [kv], deletes: [], leases: [], ...(withRecords ? { requests: records } : {}) }),
  });
  assert.equal(imported.type, 'applied', JSON.stringify(imported));
  destination.apply(table(3, 'cell-2', 'cell-2'));
  const retried = destination.apply(put('/pay/a', 'A'), 'req-pay-1');
  return { retried, first, version: destination.store.range({ type: 'get', key: '/pay/a' }).kvs[0]?.version };
}

test('a retry after the move finds the source\'s outcome on the destination and applies nothing', () => {
  const { retried, first, version } = moveRequests(true);
  assert.ok(retried.type === 'applied' && retried.duplicate, JSON.stringify(retried));
  assert.deepEqual(retried.type === 'applied' ? retried.result : null, first.type === 'applied' ? first.result : null);
  assert.equal(version, 1, 'the key was written once');
});

test('without the moved records the retry applies again (what the records prevent)', () => {
  const { retried, version } = moveRequests(false);
  assert.ok(retried.type === 'applied' && !retried.duplicate);
  assert.equal(version, 2);
});

test('an import whose request record does not decode is refused whole, before it writes anything', () => {
  const destination = cell();
  destination.apply(table(2, 'cell-2', 'cell-1'));
  const refused = destination.apply({
    type: 'importKeys',
    record: encodeImportRecord({
      prefix: '/pay/', clear: false, floor: 0, deletes: [], leases: [],
      puts: [{ key: '/pay/z', value: text('z'), version: 1, createRevision: 3, modRevision: 3, lease: 0 }],
      requests: [{ id: text('bad'), record: Uint8Array.of(0xff, 0xff, 0xff) }],
    }),
  });
  assert.ok(refused.type === 'failed' && refused.error.code === 'invalid_argument', JSON.stringify(refused));
  assert.equal(destination.store.range({ type: 'get', key: '/pay/', prefix: true }).kvs.length, 0);
});

test('records are stamped with the cell\'s dedup clock at apply: one applied late is listed from the newest stamp already seen', () => {
  // The mover lists a namespace's records again from the newest stamp it copied (no margin): that
  // is complete only because a record's stamp is the cell's replicated dedup clock when it applied
  // (it only moves forward), not its proposer's stamp. A proposal stamped long before the
  // others (it waited in a queue, or its member's clock is behind) applies with today's clock.
  const store = new MvccStore(new MemoryEngine());
  let index = 0;
  const apply = (op: Command, requestId: string, proposedAtMs: number, source: number): void => {
    index++;
    const data = encodeCommand({ proposedAtMs, source, op, requestId }, defaultMvccLimits);
    const [outcome] = store.applyBatch([{ index, term: 1, type: EntryType.normal, data }]);
    assert.equal(outcome?.type, 'applied');
  };
  apply(table(2, 'cell-1', 'cell-1'), 'table', 1_000, 1);
  for (const [i, at] of [10_000, 11_000, 12_000].entries()) apply(put(`/pay/k${i}`, 'x'), `early-${i}`, at, 1);
  const first = store.namespaceRequests('/pay/', { sinceMs: 0, after: null, scanMax: 100 });
  const newest = Math.max(...first.requests.map((r) => r.stampMs));
  assert.deepEqual(first.requests.map((r) => Buffer.from(r.id).toString()), ['early-0', 'early-1', 'early-2']);
  // Applied now, proposed 9-11 s before the newest listed: from member 1 (reordered) and member 2.
  apply(put('/pay/late', 'x'), 'late-1', 1_000, 1);
  apply(put('/pay/late2', 'x'), 'late-2', 1_500, 2);
  const again = store.namespaceRequests('/pay/', { sinceMs: newest, after: null, scanMax: 100 });
  const ids = again.requests.map((r) => Buffer.from(r.id).toString());
  assert.ok(ids.includes('late-1') && ids.includes('late-2'), `listed from stamp ${newest}: ${ids.join(', ')}`);
  assert.ok(again.requests.every((r) => r.stampMs >= newest), 'every record applied after the listing is stamped at or above it');
});

test('a record re-stamped keeps every other byte: the same outcome and fingerprint, in both store formats', () => {
  const record = { stampMs: 1_234_567, outcome: { ok: true as const, result: { type: 'put' as const, created: false, revision: 9, version: 2, fencingToken: 4 } }, request: { kind: 'put' as const, key: '/pay/a', digest: '0a0b0c0d' } };
  for (const format of [1, 2] as const) {
    const bytes = encodeDedupRecord(record, format);
    for (const stampMs of [0, 5, 1_234_567 + 3_600_000, 2 ** 40]) {
      const again = restampDedupRecord(bytes, stampMs);
      assert.deepEqual(decodeDedupRecord(again), { ...decodeDedupRecord(bytes), stampMs }, `format ${format}, stamp ${stampMs}`);
    }
  }
});

/**
 * /pay/ with one request applied on a cell whose dedup clock is `sourceClockMs` on, moved with
 * its record to a cell whose clock is `destinationClockMs` on, the import re-stamped by the
 * destination (`restamp`) or taken as listed; then `idleMs` of the destination's clock pass.
 */
function moveAcrossClocks(sourceClockMs: number, destinationClockMs: number, restamp: boolean, idleMs = 0): { source: ReturnType<typeof cell>; destination: ReturnType<typeof cell> } {
  const source = cell(sourceClockMs);
  source.apply(table(2, 'cell-1', 'cell-1'));
  source.apply(put('/pay/a', 'A'), 'req-pay-1');
  const listed = source.store.namespaceRequests('/pay/', { sinceMs: 0, after: null, scanMax: 100 }).requests;
  assert.equal(listed.length, 1);
  const destination = cell(destinationClockMs);
  destination.apply(table(2, 'cell-2', 'cell-1'));
  const kv = source.store.range({ type: 'get', key: '/pay/a' }).kvs[0];
  assert.ok(kv !== undefined);
  const sent = encodeImportRecord({
    prefix: '/pay/', clear: true, floor: source.store.revision, puts: [kv], deletes: [], leases: [],
    requests: listed.map((r) => ({ id: r.id, record: r.record, ageMs: r.ageMs })),
  });
  const imported = destination.apply({ type: 'importKeys', record: restamp ? restampImportRequests(sent, destination.store.dedupClockMs()) : sent });
  assert.equal(imported.type, 'applied', JSON.stringify(imported));
  destination.apply(table(3, 'cell-2', 'cell-2'));
  // The destination's clock moves on by its own entries (steps of at most window / 60 each).
  for (let passed = 5_000; passed <= idleMs; passed += 5_000) destination.apply(put('/other', 'o'), undefined, destinationClockMs + 2_000 + passed);
  return { source, destination };
}

const hour = 3_600_000;

test('cells\' dedup clocks differ: a moved record is re-stamped into the destination\'s clock and answers a retry there', () => {
  // The destination's clock an hour ahead of the source's (it started an hour later, or the source
  // sat idle: each clock advances only with its own cell's entries). Taken as listed, the record's
  // stamp is an hour old there, past the 10-minute window: the retry applies a second time.
  for (const restamp of [true, false]) {
    const { destination } = moveAcrossClocks(0, hour, restamp);
    const retried = destination.apply(put('/pay/a', 'A'), 'req-pay-1');
    assert.equal(retried.type === 'applied' && retried.duplicate, restamp, `restamp ${restamp}: ${JSON.stringify(retried)}`);
    assert.equal(destination.store.range({ type: 'get', key: '/pay/a' }).kvs[0]?.version, restamp ? 1 : 2);
  }
});

test('a re-stamped record expires on the destination when it would have on the source, not an hour later', () => {
  const window = defaultMvccLimits.dedupWindowMs;
  // Destination an hour behind: kept as listed, the record would outlive the window by an hour.
  const kept = moveAcrossClocks(hour, 0, true, window + 30_000).destination;
  const retried = kept.apply(put('/pay/a', 'A'), 'req-pay-1');
  assert.ok(retried.type === 'applied' && !retried.duplicate, 'past the window, the retry is a new request');
  const outlived = moveAcrossClocks(hour, 0, false, window + 30_000).destination.apply(put('/pay/a', 'A'), 'req-pay-1');
  assert.ok(outlived.type === 'applied' && outlived.duplicate, 'taken as listed, it outlives the window (what the re-stamp prevents)');
  const early = moveAcrossClocks(hour, 0, true, window - 60_000).destination;
  const within = early.apply(put('/pay/a', 'A'), 'req-pay-1');
  assert.ok(within.type === 'applied' && within.duplicate, 'within the window, the first outcome');
});

test('records imported from a cell whose clock runs ahead do not hide later ones from a listing from the newest stamp', () => {
  // /pay/ arrives on cell-2 from cell-1, whose clock is an hour ahead, then takes requests of its
  // own; the next move lists from 0, then again from the newest stamp it copied. Taken as listed,
  // the imported stamp (an hour ahead) was the newest, and the records cell-2 applied after the
  // first listing (stamped by its own clock, behind) were never listed: lost with the move.
  for (const restamp of [true, false]) {
    const { destination } = moveAcrossClocks(hour, 0, restamp);
    destination.apply(put('/pay/b', 'B'), 'req-pay-2');
    const first = destination.store.namespaceRequests('/pay/', { sinceMs: 0, after: null, scanMax: 100 }).requests;
    assert.equal(first.length, 2);
    const newest = Math.max(...first.map((r) => r.stampMs));
    destination.apply(put('/pay/c', 'C'), 'req-pay-3');
    const again = destination.store.namespaceRequests('/pay/', { sinceMs: newest, after: null, scanMax: 100 }).requests.map((r) => Buffer.from(r.id).toString());
    assert.equal(again.includes('req-pay-3'), restamp, `restamp ${restamp}: listed from ${newest}: ${again.join(', ')}`);
  }
});

test('an import record\'s ageMs is checked at the boundary: a bad one is refused, never proposed', () => {
  const sent = (ageMs: unknown, record = encodeDedupRecord({ stampMs: 5, outcome: { ok: true, result: { type: 'put', created: true, revision: 2, version: 1, fencingToken: 2 } } }, 2)) =>
    new TextEncoder().encode(JSON.stringify({ prefix: '/pay/', clear: false, floor: 0, puts: [], deletes: [], leases: [], requests: [{ id: 'aWQ=', record: Buffer.from(record).toString('base64'), ageMs }] }));
  for (const bad of [-1, 1.5, '7', null]) assert.throws(() => restampImportRequests(sent(bad), 10_000), /ageMs/);
  assert.throws(() => restampImportRequests(sent(3, Uint8Array.of(0xff, 0xff)), 10_000), /does not decode/);
  const good = JSON.parse(new TextDecoder().decode(restampImportRequests(sent(3), 10_000))) as { requests: { record: string; ageMs?: number }[] };
  assert.equal(good.requests[0]?.ageMs, undefined);
  assert.equal(decodeDedupRecord(new Uint8Array(Buffer.from(good.requests[0]?.record as string, 'base64'))).stampMs, 9_997);
  const plain = new TextEncoder().encode(JSON.stringify({ prefix: '/pay/', requests: [] }));
  assert.equal(restampImportRequests(plain, 10_000), plain, 'nothing to re-stamp: the same bytes');
});

test('records imported older than the oldest one here are pruned at the same entry on every replica, restarted or not', () => {
  // The store caches the oldest stamp of its expiry index and prunes once the clock is a window
  // past it. A re-stamped import may hold records older than that (a record 500 s old moving to
  // a cell whose records are all younger): a replica that kept its cache pruned them later than
  // one that restarted (its cache read afresh), and their states differed (the cells simulator,
  // seed 3 with imports not re-stamped: "state machine safety").
  const windowMs = defaultMvccLimits.dedupWindowMs;
  const engines = [new MemoryEngine(), new MemoryEngine()];
  let stores = engines.map((engine) => new MvccStore(engine));
  let index = 0;
  const applyAll = (op: Command, proposedAtMs: number, requestId?: string) => {
    index++;
    const data = encodeCommand({ proposedAtMs, source: 1, op, ...(requestId === undefined ? {} : { requestId }) }, defaultMvccLimits);
    for (const store of stores) store.applyBatch([{ index, term: 1, type: EntryType.normal, data }]);
  };
  const startMs = 10_000_000;
  applyAll(table(2, 'cell-1', 'cell-2'), startMs); // this cell owns / and takes /pay/ in imports
  applyAll(put('/own', 'x'), startMs + 1, 'req-own');
  applyAll(put('/own', 'y'), startMs + 2, 'req-own-2'); // every replica has cached the oldest stamp by now
  // An import of a record 500 s older than anything here (re-stamped: clock less its age).
  const old = encodeDedupRecord({ stampMs: startMs, outcome: { ok: true, result: { type: 'put', created: true, revision: 2, version: 1, fencingToken: 2 } } }, 2);
  const record = restampDedupRecord(old, startMs - 500_000);
  applyAll({ type: 'importKeys', record: encodeImportRecord({ prefix: '/pay/', clear: false, floor: 0, puts: [], deletes: [], leases: [], requests: [{ id: text('req-old'), record }] }) }, startMs + 3);
  // The second replica restarts: a new store over its engine.
  stores = [stores[0] as MvccStore, new MvccStore(engines[1] as MemoryEngine)];
  // The clock moves a window past the imported record, not past the others (steps of 10 s).
  for (let t = startMs + 10_000; t <= startMs + windowMs - 400_000; t += 10_000) applyAll(put('/tick', String(t)), t);
  const [kept, restarted] = stores as [MvccStore, MvccStore];
  assert.ok(kept.dedupClockMs() - (startMs - 500_000) > windowMs, 'the clock is a window past the imported record');
  assert.equal(kept.hash(), restarted.hash(), 'both replicas hold the same dedup table');
});
