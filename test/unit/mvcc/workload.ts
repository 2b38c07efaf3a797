// A seeded generator of Raft entries carrying every MVCC command (valid and invalid, with and
// without Request-IDs, duplicates, clock skew, leader no-ops, config entries and garbage), and of
// reads. Shared by the model tests, the crash tests (parent and child process) and the benchmarks.
import { SeededRandom, chance, pick, randomInt, type Random } from '../../../src/base/random.js';
import { EntryType, type Entry } from '../../../src/raft/types.js';
import { defaultMvccLimits } from '../../../src/mvcc/index.js';
import { encodeCommandUnchecked } from '../../../src/mvcc/command-codec.js';
import type {
  Command,
  CommandEnvelope,
  Compare,
  MvccLimits,
  RangeRequest,
  TxnOp,
} from '../../../src/mvcc/index.js';

/** What the store under test enforces: small, so that limits are hit often. */
export const testLimits: MvccLimits = {
  ...defaultMvccLimits,
  valueBytesMax: 64,
  txnOpsMax: 8,
  dedupWindowMs: 1000,
  dedupPrunePerCommandMax: 2,
  compactEventsPerEntryMax: 3,
  // The reference model has no lease table: puts name leases 1..3 without granting them.
  leaseAttachStrict: false,
};

const longStem = '/L/' + 'x'.repeat(3990);
export const keyPool: readonly string[] = [
  '/a', '/a/b', '/a/c', '/ab', '/b', '/b/a', '/c', '/\u0000x', '/a\u0000', '/é', '/😀', '/\uFFFF',
  longStem + '1', longStem + '2', '/L/' + 'y'.repeat(4093),
];
export const prefixPool: readonly string[] = ['/', '/a', '/a/', '/b', '/L/', longStem, '/\u0000'];

export type WorkItem =
  | { readonly kind: 'command'; readonly entry: Entry; readonly envelope: CommandEnvelope }
  | { readonly kind: 'noop'; readonly entry: Entry }
  | { readonly kind: 'garbage'; readonly entry: Entry };

function randomValue(random: Random): Uint8Array {
  const length = chance(random, 0.03) ? randomInt(random, 65, 100) : randomInt(random, 0, 12);
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = randomInt(random, 0, 3) * 60;
  return out;
}

function randomKeyOrPrefix(random: Random): { key: string; prefix?: true } {
  return chance(random, 0.3) ? { key: pick(random, prefixPool), prefix: true } : { key: pick(random, keyPool) };
}

function randomCompare(random: Random): Compare {
  const target = pick(random, ['version', 'createRevision', 'modRevision', 'value', 'lease'] as const);
  const op = pick(random, ['==', '!=', '<', '>'] as const);
  const value = target === 'value' ? randomValue(random) : randomInt(random, 0, 6);
  return { key: pick(random, keyPool), target, op, value };
}

function randomTxnOp(random: Random, scale: number): TxnOp {
  const roll = randomInt(random, 0, 2);
  if (roll === 0) return { type: 'put', key: pick(random, keyPool), value: randomValue(random) };
  if (roll === 1) return { type: 'delete', ...randomKeyOrPrefix(random) };
  return randomRead(random, 0, scale);
}

export function randomRead(random: Random, revisionMax: number, scale = 1): RangeRequest {
  const request: { -readonly [K in keyof RangeRequest]: RangeRequest[K] } = {
    type: 'get',
    ...randomKeyOrPrefix(random),
  };
  if (chance(random, 0.3)) request.limit = randomInt(random, 0, 3 * scale);
  if (chance(random, 0.15)) request.keysOnly = true;
  if (chance(random, 0.1)) request.countOnly = true;
  if (revisionMax > 0 && chance(random, 0.4)) request.revision = randomInt(random, 0, revisionMax + 2);
  return request;
}

function randomCommand(random: Random, step: number): Command {
  const roll = randomInt(random, 0, 99);
  if (roll < 38) {
    const op: Record<string, unknown> = {
      type: 'put',
      key: pick(random, keyPool),
      value: randomValue(random),
    };
    if (chance(random, 0.4)) op['lease'] = randomInt(random, 1, 3);
    if (chance(random, 0.15)) op['ifVersion'] = randomInt(random, 0, 3);
    if (chance(random, 0.1)) op['ifRevision'] = randomInt(random, 0, step);
    return op as unknown as Command;
  }
  if (roll < 55) {
    const target = randomKeyOrPrefix(random);
    const op: Record<string, unknown> = { type: 'delete', ...target };
    if (target.prefix === undefined && chance(random, 0.2)) op['ifVersion'] = randomInt(random, 0, 3);
    if (target.prefix === undefined && chance(random, 0.1)) op['ifRevision'] = randomInt(random, 0, step);
    return op as unknown as Command;
  }
  if (roll < 85) {
    const compare = Array.from({ length: randomInt(random, 0, 3) }, () => randomCompare(random));
    const size = (): number => (chance(random, 0.05) ? randomInt(random, 4, 7) : randomInt(random, 0, 3));
    const success = Array.from({ length: size() }, () => randomTxnOp(random, 1));
    const failure = Array.from({ length: size() }, () => randomTxnOp(random, 1));
    return { type: 'txn', compare, success, failure };
  }
  if (roll < 92) return { type: 'compact', revision: randomInt(random, 0, Math.floor(step * 0.7) + 1) };
  return { type: 'deleteLeaseKeys', lease: randomInt(random, 1, 3) };
}

export function generateWorkload(seed: bigint, count: number): WorkItem[] {
  const random = new SeededRandom(seed);
  const items: WorkItem[] = [];
  let term = 1;
  let clockMs = 1_000;
  // Proposers (0: an entry without a source, as older versions wrote) whose clocks are off by
  // far more than the window and sometimes step: the dedup clock must not care.
  const offsets = [0, 0, 50_000, -70_000];
  for (let index = 1; index <= count; index++) {
    if (chance(random, 0.01)) offsets[randomInt(random, 1, 3)] = randomInt(random, -90_000, 90_000);
    if (chance(random, 0.03)) term++;
    clockMs += chance(random, 0.03) ? 1_500 : randomInt(random, 0, 40);
    if (chance(random, 0.03)) clockMs = Math.max(0, clockMs - 200); // a new leader's clock lags
    const roll = randomInt(random, 0, 99);
    if (roll < 6) {
      const type = roll < 3 ? EntryType.config : EntryType.normal;
      const data = type === EntryType.config ? Uint8Array.of(1, 2, 3) : new Uint8Array(0);
      items.push({ kind: 'noop', entry: { index, term, type, data } });
      continue;
    }
    if (roll < 8) {
      const data = Uint8Array.from({ length: randomInt(random, 1, 20) }, () => randomInt(random, 0, 255));
      items.push({ kind: 'garbage', entry: { index, term, type: EntryType.normal, data } });
      continue;
    }
    const op = randomCommand(random, index);
    const member = randomInt(random, 0, 3);
    const stamp = { proposedAtMs: Math.max(0, clockMs + (offsets[member] as number)), ...(member > 0 ? { source: member } : {}) };
    const envelope: CommandEnvelope = chance(random, 0.4)
      ? { requestId: `req-${randomInt(random, 1, 6)}`, ...stamp, op }
      : { ...stamp, op };
    // Unchecked, so that the store's own validation at apply runs on invalid commands too.
    const data = encodeCommandUnchecked(envelope);
    items.push({ kind: 'command', envelope, entry: { index, term, type: EntryType.normal, data } });
  }
  return items;
}

/** Cuts a list into batches of 1..maxSize, deterministically from `random`. */
export function batches<T>(random: Random, items: readonly T[], maxSize: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; ) {
    const size = randomInt(random, 1, maxSize);
    out.push(items.slice(i, i + size));
    i += size;
  }
  return out;
}
