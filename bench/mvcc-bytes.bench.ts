// Where the store's bytes go, per key (issue 22): loads N keys into a real MvccStore on a real
// LmdbEngine (applyBatch of encoded command entries, as a node applies them), then reports the
// file size, LMDB's own stats, and per table (one-byte prefix, src/mvcc/layout.ts) the entries,
// their key and value bytes, and the pages that table takes. Then it writes every key again
// (`--writes K` writes in all) and compacts, to show history's share.
//
// Per-table pages: every write transaction is replayed, in the same order, into one shadow LMDB
// environment per table (same page size and options), so each table's leaf, branch and overflow
// pages and its fill are measured under the very insertion pattern the store saw. (`--no-shadow`
// skips it.) Fill = (key + value + LMDB's 8-byte node header and 2-byte slot per entry, rounded
// to even) / (leaf pages x usable page bytes).
//
//   npm run bench:bytes -- [--keys 100000] [--value-bytes 256] [--key-bytes 34]
//                          [--with-request-ids] [--writes 3] [--batch 1024] [--json]
//                          [--store-format 2]
//
// `--store-format 1`: the store starts as stores made before format 2 do (their meta record), so
// it writes the fixed-width records, full history events and JSON Request-ID records of before.
//
// `--reuse [--cycles 3] [--compact-events-per-entry N] [--checkpoint-entries 500 | --checkpoint-ms
// MS]` measures instead whether freed space is reused (bench/space-reuse.ts): load, then per cycle delete half, compact, write half again; a
// rewrite may grow the file at most 10%, later cycles at most 10% past the first, and no apply
// batch may take over 100 ms (exit code 1 otherwise). `--key-bytes` defaults to 32 there.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { open, type Database } from 'lmdb';
import { EntryType, type Entry } from '../src/raft/types.js';
import { MvccStore, defaultMvccLimits, encodeCommand } from '../src/mvcc/index.js';
import type { KvEngine, KvEntry, KvRange, KvWriter } from '../src/mvcc/index.js';
import { LmdbEngine } from '../src/storage/index.js';
import { measureSpaceReuse, printSpaceReuse } from './space-reuse.js';

const { values: args } = parseArgs({
  options: {
    keys: { type: 'string', default: '100000' },
    'value-bytes': { type: 'string', default: '256' },
    'key-bytes': { type: 'string' },
    'with-request-ids': { type: 'boolean', default: false },
    writes: { type: 'string', default: '3' },
    batch: { type: 'string', default: '1024' },
    'no-shadow': { type: 'boolean', default: false },
    reuse: { type: 'boolean', default: false },
    'compact-events-per-entry': { type: 'string' },
    cycles: { type: 'string', default: '3' },
    'checkpoint-ms': { type: 'string' },
    'checkpoint-entries': { type: 'string' },
    'store-format': { type: 'string', default: '2' },
    json: { type: 'boolean', default: false },
  },
});
const keyCount = Number(args.keys);
const valueBytes = Number(args['value-bytes']);
const keyBytesTarget = Number(args['key-bytes'] ?? (args.reuse === true ? 32 : 34));
const withRequestIds = args['with-request-ids'] === true;
const writesPerKey = Math.max(1, Number(args.writes));
const batchSize = Number(args.batch);
const shadowed = args['no-shadow'] !== true;
const storeFormat = Number(args['store-format']);
if (storeFormat !== 1 && storeFormat !== 2) throw new Error('--store-format is 1 or 2');
const pageSize = 8192;
// An LMDB page header is 16 bytes (LMDB 0.9 / lmdb-js's fork with 8 KiB pages).
const pageUsable = pageSize - 16;

const tableNames: Record<number, string> = {
  0x01: 'meta',
  0x64: "dedup 'd'",
  0x65: "dedup expiry 'e'",
  0x68: "history 'h'",
  0x6b: "keys (current) 'k'",
  0x6c: "lease index 'l'",
  0x6d: "members 'm'",
  0x72: "revision index 'r'",
  0x73: "dedup clock 's'",
};
const tableName = (prefix: number): string => tableNames[prefix] ?? `0x${prefix.toString(16)}`;

const services = ['payments', 'search-api', 'auth', 'inventory-svc', 'ledger', 'notifications', 'web', 'gateway'];

/** Realistic names, inserted in an order unrelated to their sort order: `/svc/<service>/instance-<8 hex>`. */
function keyOf(i: number): string {
  const instance = (Math.imul(i, 0x9e3779b1) >>> 0).toString(16).padStart(8, '0');
  const service = services[i % services.length] as string;
  // `/svc/` + service + `/instance-` + 8: pad or cut the service name to reach the target length.
  const serviceBytes = Math.max(1, keyBytesTarget - 5 - 10 - 8);
  const name = service.length >= serviceBytes ? service.slice(0, serviceBytes) : service.padEnd(serviceBytes, '-');
  return `/svc/${name}/instance-${instance}`;
}

const value = new Uint8Array(valueBytes);
for (let i = 0; i < valueBytes; i++) value[i] = (i * 31 + 7) & 0xff;

/** Proposal times advance 0.2 ms per entry (5,000 writes/s): a 100K load stays inside the dedup window. */
function putEntry(index: number, key: number, pass: number): Entry {
  const op = { type: 'put' as const, key: keyOf(key), value };
  const requestId = withRequestIds ? `c-${requestIdBody(key, pass)}` : undefined;
  const envelope = {
    proposedAtMs: 1_700_000_000_000 + Math.floor(index / 5),
    source: 1,
    ...(requestId === undefined ? {} : { requestId }),
    op,
  };
  return { index, term: 1, type: EntryType.normal, data: encodeCommand(envelope, defaultMvccLimits) };
}

/** 16 base64url characters, like the client's `c-` + 12 random bytes. */
function requestIdBody(key: number, pass: number): string {
  const bytes = Buffer.alloc(12);
  bytes.writeUInt32BE(Math.imul(key + 1, 0x85ebca6b) >>> 0, 0);
  bytes.writeUInt32BE(Math.imul(pass + 1, 0xc2b2ae35) >>> 0, 4);
  bytes.writeUInt32BE(key ^ 0x5bd1e995, 8);
  return bytes.toString('base64url');
}

type Shadows = Map<number, Database<Uint8Array, Uint8Array>>;

/** Forwards to the store's engine and replays each write transaction into per-table shadow envs. */
class ShadowingEngine implements KvEngine {
  constructor(
    private readonly inner: LmdbEngine,
    private readonly shadows: Shadows | null,
    private readonly shadowRoot: string,
  ) {}
  get(key: Uint8Array): Uint8Array | undefined {
    return this.inner.get(key);
  }
  range(range: KvRange): Iterable<KvEntry> {
    return this.inner.range(range);
  }
  count(range: KvRange): number {
    return this.inner.count(range);
  }
  snapshotEntries(): Iterable<KvEntry> {
    return this.inner.snapshotEntries();
  }
  replaceAll(entries: Iterable<KvEntry>): void {
    this.inner.replaceAll(entries);
  }
  write<T>(body: (writer: KvWriter) => T): T {
    const ops: { key: Uint8Array; value: Uint8Array | undefined }[] = [];
    const result = this.inner.write((writer) =>
      body({
        get: (key) => writer.get(key),
        range: (range) => writer.range(range),
        put: (key, value) => {
          writer.put(key, value);
          if (this.shadows !== null) ops.push({ key: key.slice(), value: value.slice() });
        },
        delete: (key) => {
          writer.delete(key);
          if (this.shadows !== null) ops.push({ key: key.slice(), value: undefined });
        },
      }),
    );
    if (this.shadows !== null) this.replay(this.shadows, ops);
    return result;
  }
  private replay(shadows: Shadows, ops: readonly { key: Uint8Array; value: Uint8Array | undefined }[]): void {
    const byTable = new Map<number, typeof ops[number][]>();
    for (const op of ops) {
      const prefix = op.key[0] as number;
      let list = byTable.get(prefix);
      if (list === undefined) byTable.set(prefix, (list = []));
      list.push(op);
    }
    for (const [prefix, list] of byTable) {
      let db = shadows.get(prefix);
      if (db === undefined) {
        db = open<Uint8Array, Uint8Array>({
          path: join(this.shadowRoot, `table-${prefix.toString(16)}.mdb`),
          keyEncoding: 'binary', encoding: 'binary', pageSize, compression: false, cache: false,
          noSync: true, overlappingSync: false, useWritemap: false, mapSize: 16 * 2 ** 30,
        });
        shadows.set(prefix, db);
      }
      const target = db;
      target.transactionSync(() => {
        for (const op of list) {
          if (op.value === undefined) target.removeSync(op.key);
          else target.putSync(op.key, op.value);
        }
      });
    }
  }
}

interface TableFigures {
  table: string;
  entries: number;
  keyBytes: number;
  valueBytes: number;
  /** key + value + node header and slot, as LMDB lays each entry on a leaf page. */
  nodeBytes: number;
  leafPages: number | null;
  branchPages: number | null;
  overflowPages: number | null;
  depth: number | null;
  pageBytes: number | null;
  fill: number | null;
}

function scanTables(engine: LmdbEngine, shadows: Shadows | null): TableFigures[] {
  const tables = new Map<number, TableFigures>();
  for (const { key, value } of engine.snapshotEntries()) {
    const prefix = key[0] as number;
    let figures = tables.get(prefix);
    if (figures === undefined) {
      figures = {
        table: tableName(prefix), entries: 0, keyBytes: 0, valueBytes: 0, nodeBytes: 0,
        leafPages: null, branchPages: null, overflowPages: null, depth: null, pageBytes: null, fill: null,
      };
      tables.set(prefix, figures);
    }
    figures.entries++;
    figures.keyBytes += key.length;
    figures.valueBytes += value.length;
    figures.nodeBytes += 2 + even(8 + key.length + value.length);
  }
  if (shadows !== null) {
    for (const [prefix, db] of shadows) {
      const figures = tables.get(prefix);
      if (figures === undefined) continue;
      const stats = db.getStats() as Record<string, number>;
      figures.leafPages = stats['treeLeafPageCount'] as number;
      figures.branchPages = stats['treeBranchPageCount'] as number;
      figures.overflowPages = stats['overflowPages'] as number;
      figures.depth = stats['treeDepth'] as number;
      figures.pageBytes = (figures.leafPages + figures.branchPages + figures.overflowPages) * pageSize;
      figures.fill = figures.leafPages === 0 ? null : figures.nodeBytes / (figures.leafPages * pageUsable);
    }
  }
  return [...tables.entries()].sort((a, b) => a[0] - b[0]).map(([, figures]) => figures);
}

function even(n: number): number {
  return n + (n & 1);
}

interface Phase {
  phase: string;
  liveKeys: number;
  fileBytes: number;
  diskBytes: number;
  lmdb: Record<string, unknown>;
  usedPages: number;
  treePages: number;
  tables: TableFigures[];
}

function measure(phase: string, engine: LmdbEngine, shadows: Shadows | null): Phase {
  const { env, databases } = engine.stats();
  const sum = (field: string): number =>
    Object.values(databases).reduce((total, stats) => total + (stats[field] as number), 0);
  const treePages = sum('treeLeafPageCount') + sum('treeBranchPageCount') + sum('overflowPages');
  return {
    phase,
    liveKeys: keyCount,
    fileBytes: statSync(engine.path).size,
    diskBytes: engine.diskBytes(),
    lmdb: {
      pageSize: env['pageSize'],
      databases: Object.fromEntries(
        Object.entries(databases).map(([name, stats]) => [
          name,
          {
            depth: stats['treeDepth'],
            branch: stats['treeBranchPageCount'],
            leaf: stats['treeLeafPageCount'],
            overflow: stats['overflowPages'],
            entries: stats['entryCount'],
          },
        ]),
      ),
      lastPageNumber: env['lastPageNumber'],
      freeListEntries: (env['free'] as Record<string, number>)['entryCount'],
    },
    usedPages: (env['lastPageNumber'] as number) + 1,
    treePages,
    tables: scanTables(engine, shadows),
  };
}

function print(result: Phase): void {
  const perKey = (bytes: number): string => (bytes / result.liveKeys).toFixed(1).padStart(8);
  console.log(`\n== ${result.phase}: ${result.liveKeys} live keys`);
  console.log(
    `file ${(result.fileBytes / 2 ** 20).toFixed(1)} MiB (on disk ${(result.diskBytes / 2 ** 20).toFixed(1)} MiB), ` +
      `${perKey(result.fileBytes).trim()} B/key file, ${perKey(result.diskBytes).trim()} B/key on disk`,
  );
  console.log(`lmdb: ${JSON.stringify(result.lmdb)}`);
  console.log(
    `pages: ${result.usedPages} used up to the last page (${perKey(result.usedPages * pageSize).trim()} B/key), ` +
      `${result.treePages} in the tree (${perKey(result.treePages * pageSize).trim()} B/key), ` +
      `${result.usedPages - result.treePages} free or free-list`,
  );
  console.log(
    `${'table'.padEnd(22)} ${'entries'.padStart(9)} ${'key B/k'.padStart(8)} ${'val B/k'.padStart(8)} ${'node B/k'.padStart(8)}` +
      ` ${'pages B/k'.padStart(9)} ${'leaf'.padStart(7)} ${'branch'.padStart(6)} ${'ovfl'.padStart(5)} ${'fill'.padStart(5)}`,
  );
  let raw = 0;
  let node = 0;
  let pages = 0;
  for (const t of result.tables) {
    raw += t.keyBytes + t.valueBytes;
    node += t.nodeBytes;
    pages += t.pageBytes ?? 0;
    console.log(
      `${t.table.padEnd(22)} ${String(t.entries).padStart(9)} ${perKey(t.keyBytes)} ${perKey(t.valueBytes)} ${perKey(t.nodeBytes)}` +
        ` ${t.pageBytes === null ? '        -' : perKey(t.pageBytes).padStart(9)} ${String(t.leafPages ?? '-').padStart(7)}` +
        ` ${String(t.branchPages ?? '-').padStart(6)} ${String(t.overflowPages ?? '-').padStart(5)}` +
        ` ${t.fill === null ? '    -' : `${Math.round(t.fill * 100)}%`.padStart(5)}`,
    );
  }
  console.log(
    `${'total'.padEnd(22)} ${''.padStart(9)} ${'raw k+v'.padStart(8)} ${perKey(raw)} ${perKey(node)}` +
      ` ${shadowed ? perKey(pages).padStart(9) : '        -'}   (file/raw ${(result.fileBytes / raw).toFixed(2)}x)`,
  );
}

function apply(store: MvccStore, entries: Entry[]): void {
  for (let i = 0; i < entries.length; i += batchSize) store.applyBatch(entries.slice(i, i + batchSize));
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'baton-mvcc-bytes-'));
  const shadowRoot = join(root, 'shadow');
  const shadows: Shadows | null = shadowed ? new Map() : null;
  try {
    const engine = LmdbEngine.open({ directory: join(root, 'db'), commits: 'deferred' });
    // An empty store's meta record as format 1 writes it: u8 format, five u64 zeros.
    if (storeFormat === 1) engine.write((writer) => writer.put(Uint8Array.of(0x01), Uint8Array.of(1, ...new Array<number>(40).fill(0))));
    const store = new MvccStore(new ShadowingEngine(engine, shadows, shadowRoot));
    if (store.storeFormat !== storeFormat) throw new Error(`store format ${store.storeFormat}, asked ${storeFormat}`);
    const sample = keyOf(0);
    console.log(
      `MVCC bytes per key: ${keyCount} keys (e.g. ${sample}, ${Buffer.byteLength(sample)} B), ${valueBytes}-byte values, ` +
        `batches of ${batchSize}, request IDs ${withRequestIds ? 'on' : 'off'}, store format ${storeFormat}, ` +
        `${engine.splitHistory ? 'history in its own LMDB database' : 'one LMDB database'}, node ${process.version}`,
    );
    const phases: Phase[] = [];
    let index = 1;
    for (let pass = 0; pass < writesPerKey; pass++) {
      const startMs = performance.now();
      for (let first = 0; first < keyCount; first += batchSize) {
        const batch: Entry[] = [];
        for (let key = first; key < Math.min(first + batchSize, keyCount); key++) batch.push(putEntry(index++, key, pass));
        apply(store, batch);
      }
      const ms = performance.now() - startMs;
      const name = pass === 0 ? 'load (each key written once)' : `after ${pass + 1} writes per key`;
      if (pass === 0 || pass === writesPerKey - 1) {
        console.log(`(${name}: ${((keyCount / ms) * 1000).toFixed(0)} puts/s${shadowed ? ' with shadow replay' : ''})`);
        phases.push(measure(name, engine, shadows));
        print(phases[phases.length - 1] as Phase);
      }
    }
    // Compact at the current revision; the history below it goes 512 events per later entry.
    const op = { type: 'compact' as const, revision: store.revision };
    const compactEntry = { index: index++, term: 1, type: EntryType.normal, data: encodeCommand({ proposedAtMs: 1_700_000_000_000 + Math.floor(index / 5), source: 1, op }, defaultMvccLimits) };
    store.applyBatch([compactEntry]);
    while (store.compactionPending()) {
      const noops: Entry[] = [];
      for (let i = 0; i < 64; i++) noops.push({ index: index++, term: 1, type: EntryType.normal, data: new Uint8Array(0) });
      store.applyBatch(noops);
    }
    phases.push(measure('after compaction at the last revision', engine, shadows));
    print(phases[phases.length - 1] as Phase);
    await engine.close();
    if (args.json === true) {
      console.log(JSON.stringify({ keys: keyCount, valueBytes, keyBytes: Buffer.byteLength(sample), withRequestIds, storeFormat, batchSize, phases }));
    }
  } finally {
    if (shadows !== null) for (const db of shadows.values()) await db.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** `--reuse`: the space-reuse check; its verdict is the exit code. */
async function mainReuse(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'baton-space-reuse-'));
  try {
    const step = args['compact-events-per-entry'];
    const options = {
      directory: join(root, 'db'), keyCount, batchEntries: batchSize, keyBytes: keyBytesTarget, valueBytes,
      cycles: Number(args.cycles),
      checkpoints: args['checkpoint-ms'] !== undefined
        ? { type: 'interval' as const, ms: Number(args['checkpoint-ms']) }
        : { type: 'entries' as const, entries: Number(args['checkpoint-entries'] ?? 500) },
      ...(step === undefined ? {} : { compactEventsPerEntryMax: Number(step) }),
    };
    const result = await measureSpaceReuse(options);
    printSpaceReuse(result, options);
    if (args.json === true) console.log(JSON.stringify(result));
    const spaceOk = result.rewriteGrowthMax <= 1.1 && result.steadyGrowth <= 1.1;
    const pauseOk = result.batchMsMax <= 100;
    console.log(`space reuse ${spaceOk ? 'PASS' : 'FAIL'}, pauses ${pauseOk ? 'PASS' : 'FAIL'}`);
    const ok = spaceOk && pauseOk;
    if (!ok) process.exitCode = 1;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await (args.reuse === true ? mainReuse() : main());
