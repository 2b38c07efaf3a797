// Store formats (issue 22): a store written by the code before format 2 (a fixture built with
// main at 57191d2, test/fixtures/mvcc-format1) opens, here on LMDB and reopened, and answers
// every read at every retained revision, every watch event, lease and Request-ID as that code
// did; it goes on writing format 1 byte for byte (so a cell whose members upgrade at different
// times stays identical); upgraded through the log at one index, it answers as a store that
// wrote format 2 from the start, hashes alike and snapshots alike, and retries of Request-IDs
// recorded before the upgrade get their first answers. Digests of answers come from
// answers.mjs, run by both the fixture's generator and this test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { EntryType, type Entry } from '../../../src/raft/types.js';
import { MemoryEngine, MvccStore, encodeCommand } from '../../../src/mvcc/index.js';
import type { ApplyOutcome, KvEngine, MvccLimits } from '../../../src/mvcc/index.js';
import { tablePrefix } from '../../../src/mvcc/layout.js';
import { LmdbEngine } from '../../../src/storage/index.js';
import { withTempDir } from '../storage/temp-dir.js';
import { projectRoot } from '../project-root.js';

interface Digests {
  readonly revisions: readonly string[];
  readonly events: string;
  readonly leases: string;
  readonly requests: string;
}

interface Fixture {
  readonly limits: MvccLimits;
  readonly early: number;
  readonly entries: readonly { index: number; term: number; data: string }[];
  readonly outcomeDigests: readonly string[];
  readonly requestIds: readonly string[];
  readonly snapshotEarly: string;
  readonly digestsEarly: Digests;
  readonly snapshotLast: string;
  readonly digestsLast: Digests;
  readonly revision: number;
  readonly compactRevision: number;
}

interface Answers {
  answerDigests(store: MvccStore, requestIds: readonly string[]): Digests;
  outcomeJson(outcome: ApplyOutcome): unknown;
  json(value: unknown): string;
}

const directory = join(projectRoot(import.meta.url, 'package.json'), 'test/fixtures/mvcc-format1');
const fixture = JSON.parse(readFileSync(join(directory, 'fixture.json'), 'utf8')) as Fixture;
const answers = (await import(pathToFileURL(join(directory, 'answers.mjs')).href)) as Answers;
const { limits } = fixture;
const entries: Entry[] = fixture.entries.map((e) => ({
  index: e.index,
  term: e.term,
  type: EntryType.normal,
  data: new Uint8Array(Buffer.from(e.data, 'base64')),
}));
const early = entries.slice(0, fixture.early);
const late = entries.slice(fixture.early);

/** As the generator: sha256 of the outcome's JSON, 12 hex digits. */
const digestOf = (outcome: ApplyOutcome): string =>
  createHash('sha256').update(JSON.stringify(answers.outcomeJson(outcome))).digest('hex').slice(0, 12);

function restored(snapshot: string, engine: KvEngine = new MemoryEngine()): MvccStore {
  const store = new MvccStore(engine, limits);
  store.restore([new Uint8Array(Buffer.from(snapshot, 'base64'))]);
  return store;
}

function snapshotBytes(store: MvccStore): Buffer {
  return Buffer.concat([...store.snapshot().chunks]);
}

/** Applies in batches of 1 to 17 entries, as a member catching up would. */
function applyAll(store: MvccStore, list: readonly Entry[]): ApplyOutcome[] {
  const outcomes: ApplyOutcome[] = [];
  for (let at = 0, size = 1; at < list.length; at += size, size = (size % 17) + 1) {
    outcomes.push(...store.applyBatch(list.slice(at, at + size)));
  }
  return outcomes;
}

/** Without a source, so it moves no dedup clock: only the format changes. */
function upgradeEntry(index: number): Entry {
  const op = { type: 'upgradeStore' as const, storeFormat: 2 };
  const data = encodeCommand({ proposedAtMs: 1_700_000_000_000, op }, limits);
  return { index, term: late[0]?.term ?? 1, type: EntryType.normal, data };
}

/** `list` moved `by` indexes later (an entry's data does not name its index). */
const shifted = (list: readonly Entry[], by: number): Entry[] => list.map((e) => ({ ...e, index: e.index + by }));

const withoutIndex = (outcome: ApplyOutcome): string => answers.json({ ...outcome, index: 0 });

/** How many records of `table` each format wrote (format 2's first byte is 0b10xx_xxxx). */
function formatsOf(engine: KvEngine, table: Uint8Array): { fixed: number; compact: number } {
  const counts = { fixed: 0, compact: 0 };
  for (const entry of engine.snapshotEntries()) {
    if (entry.key[0] !== table[0]) continue;
    if (((entry.value[0] ?? 0) & 0xc0) === 0x80) counts.compact++;
    else counts.fixed++;
  }
  return counts;
}

test('a store the old code wrote opens on LMDB, also reopened, and answers as the old code did', async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, 'db');
    let engine = LmdbEngine.open({ directory: path });
    restored(fixture.snapshotLast, engine);
    await engine.close();
    engine = LmdbEngine.open({ directory: path });
    try {
      const store = new MvccStore(engine, limits);
      assert.equal(store.storeFormat, 1);
      assert.equal(store.revision, fixture.revision);
      assert.equal(store.compactRevision, fixture.compactRevision);
      assert.ok(store.compactRevision > 0 && store.revision - store.compactRevision > 100, 'compacted, with history kept');
      assert.deepEqual(answers.answerDigests(store, fixture.requestIds), fixture.digestsLast);
    } finally {
      await engine.close();
    }
  });
});

test('a format-1 store goes on writing format 1 byte for byte: same outcomes, same snapshot', () => {
  const store = restored(fixture.snapshotEarly);
  assert.equal(store.storeFormat, 1);
  assert.deepEqual(answers.answerDigests(store, fixture.requestIds), fixture.digestsEarly);
  const outcomes = applyAll(store, late);
  assert.deepEqual(outcomes.map(digestOf), fixture.outcomeDigests.slice(fixture.early));
  assert.equal(store.storeFormat, 1);
  assert.ok(snapshotBytes(store).equals(Buffer.from(fixture.snapshotLast, 'base64')), 'the old code\'s bytes');
});

test('upgraded through the log, an old store answers as one that wrote format 2 all along', () => {
  // Upgraded: the old store at entry `early`, then the upgrade, then the rest of the log.
  const upgraded = restored(fixture.snapshotEarly);
  const upgradeOutcome = upgraded.applyBatch([upgradeEntry(fixture.early + 1)])[0];
  assert.ok(upgradeOutcome?.type === 'applied' && upgradeOutcome.result.type === 'upgradeStore');
  assert.equal(upgraded.storeFormat, 2);
  const upgradedOutcomes = applyAll(upgraded, shifted(late, 1));
  // Fresh: the latest format (5: format 2's records) from the first entry; the upgrade entry to
  // 2 is refused there (never back) and changes nothing.
  const fresh = new MvccStore(new MemoryEngine(), limits);
  assert.equal(fresh.storeFormat, 5);
  applyAll(fresh, early);
  const freshUpgrade = fresh.applyBatch([upgradeEntry(fixture.early + 1)])[0];
  assert.ok(freshUpgrade?.type === 'failed' && freshUpgrade.error.code === 'invalid_argument');
  assert.equal(fresh.storeFormat, 5);
  const freshOutcomes = applyAll(fresh, shifted(late, 1));
  // Every outcome as the old code answered it (Request-ID replays of old records included).
  const oldOutcomes = applyAll(restored(fixture.snapshotEarly), late);
  const replays = upgradedOutcomes.slice(0, 20).filter((o) => o.type !== 'noop' && o.duplicate).length;
  assert.ok(replays > 0, 'retries right after the upgrade, answered from format-1 records');
  assert.deepEqual(upgradedOutcomes.map(withoutIndex), oldOutcomes.map(withoutIndex));
  assert.deepEqual(freshOutcomes.map(withoutIndex), oldOutcomes.map(withoutIndex));
  // Every read at every revision, events, leases and Request-IDs as the old code's.
  assert.deepEqual(answers.answerDigests(upgraded, fixture.requestIds), fixture.digestsLast);
  assert.deepEqual(answers.answerDigests(fresh, fixture.requestIds), fixture.digestsLast);
  assert.equal(upgraded.hash({ includeAppliedIndex: true }), fresh.hash({ includeAppliedIndex: true }));
  assert.notEqual(snapshotBytes(upgraded).length, snapshotBytes(fresh).length, 'the upgraded store still holds format-1 records');
});

test('an upgraded store holds both formats, and its snapshot restores with the same answers, hash and bytes', () => {
  const engine = new MemoryEngine();
  const store = restored(fixture.snapshotEarly, engine);
  store.applyBatch([upgradeEntry(fixture.early + 1)]);
  // Request-IDs expire within seconds here: the format-1 records are there only at first.
  applyAll(store, shifted(late.slice(0, 20), 1));
  const dedup = formatsOf(engine, tablePrefix.dedup);
  assert.ok(dedup.fixed > 0 && dedup.compact > 0, `dedup: ${JSON.stringify(dedup)}`);
  applyAll(store, shifted(late.slice(20), 1));
  for (const table of [tablePrefix.current, tablePrefix.history]) {
    const counts = formatsOf(engine, table);
    assert.ok(counts.fixed > 0 && counts.compact > 0, `table ${String.fromCharCode(table[0] as number)}: ${JSON.stringify(counts)}`);
  }
  const copy = new MvccStore(new MemoryEngine(), limits);
  copy.restore(store.snapshot({ chunkBytesMax: 700 }).chunks);
  assert.equal(copy.storeFormat, 2);
  assert.equal(copy.hash({ includeAppliedIndex: true }), store.hash({ includeAppliedIndex: true }));
  assert.ok(snapshotBytes(copy).equals(snapshotBytes(store)));
  assert.deepEqual(answers.answerDigests(copy, fixture.requestIds), fixture.digestsLast);
  // Compacting everything leaves both formats' records consistent: reads and events as before.
  const next = store.appliedIndex + 1;
  const compact = { type: 'compact' as const, revision: store.revision };
  const data = encodeCommand({ proposedAtMs: 1_700_000_000_000, op: compact }, limits);
  const noops = Array.from({ length: 200 }, (_, i): Entry => ({ index: next + 1 + i, term: 9, type: EntryType.normal, data: new Uint8Array(0) }));
  for (const target of [store, copy]) {
    const before = target.range({ type: 'get', key: '/', prefix: true });
    target.applyBatch([{ index: next, term: 9, type: EntryType.normal, data }, ...noops]);
    assert.equal(target.compactionPending(), false);
    assert.deepEqual(target.range({ type: 'get', key: '/', prefix: true }).kvs, before.kvs);
  }
  assert.equal(copy.hash(), store.hash());
});

test('upgradeStore: the same format again changes nothing; an older or unknown format is refused', () => {
  const store = restored(fixture.snapshotEarly);
  const at = fixture.early;
  const entry = (index: number, storeFormat: number): Entry => ({
    index,
    term: 9,
    type: EntryType.normal,
    data: encodeCommand({ proposedAtMs: 1_700_000_000_000, op: { type: 'upgradeStore', storeFormat } }, limits),
  });
  const hash = store.hash();
  const [same] = store.applyBatch([entry(at + 1, 1)]);
  assert.ok(same?.type === 'applied' && same.result.type === 'upgradeStore' && same.result.storeFormat === 1);
  const [future] = store.applyBatch([entry(at + 2, 6)]);
  assert.ok(future?.type === 'failed' && future.error.code === 'invalid_argument', 'a format this version does not write');
  assert.equal(store.storeFormat, 1);
  assert.equal(store.hash(), hash, 'refused and repeated upgrades change no state');
  store.applyBatch([entry(at + 3, 2)]);
  assert.equal(store.storeFormat, 2);
  const [back] = store.applyBatch([entry(at + 4, 1)]);
  assert.ok(back?.type === 'failed' && back.error.code === 'invalid_argument', 'never back to an older format');
  assert.equal(store.storeFormat, 2);
  assert.equal(store.hash(), hash, 'a format changes how state is stored, never the state');
});

test('upgradeStore moves no dedup clock and records no Request-ID, as an older version refusing it', () => {
  const store = restored(fixture.snapshotEarly);
  const hash = store.hash();
  const envelope = { requestId: 'up-1', proposedAtMs: 1_800_000_000_000, source: 3, op: { type: 'upgradeStore' as const, storeFormat: 2 } };
  const data = encodeCommand(envelope, limits);
  const [outcome] = store.applyBatch([{ index: fixture.early + 1, term: 9, type: EntryType.normal, data }]);
  assert.ok(outcome?.type === 'applied' && !outcome.duplicate && outcome.requestId === 'up-1');
  assert.equal(store.storeFormat, 2);
  assert.equal(store.hasRequest('up-1'), false);
  assert.equal(store.hash(), hash);
});
