// A reference for what watchers must see: a plain map of keys that turns each generated command
// into the events it causes (revision, type, key, value, prevKv value, version), independently of
// the MVCC store. Also the seeded generator of those commands and the replicas that apply them.
import { chance, pick, randomInt, type Random } from '../../../src/base/random.js';
import { EntryType, type Entry } from '../../../src/raft/types.js';
import {
  MemoryEngine,
  MvccStore,
  compareBytes,
  defaultMvccLimits,
  encodeCommand,
  utf8,
  type Command,
  type MvccEvent,
  type TxnOp,
} from '../../../src/mvcc/index.js';

export const keyPool = ['/a', '/a/b', '/a/c', '/ab', '/b', '/b/x', '/b/y', '/c', '/é', '/a/é'] as const;
export const prefixPool = ['/', '/a', '/a/', '/b', '/b/', '/é'] as const;

/** The comparable form of an event: what a watcher's user can observe. */
export function eventLine(event: MvccEvent): string {
  const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString('utf8');
  const prev = event.prevKv === null ? '-' : text(event.prevKv.value);
  return `${event.revision} ${event.type} ${event.kv.key} ${text(event.kv.value)} v${event.kv.version} prev=${prev}`;
}

interface ModelKv {
  value: string;
  version: number;
}

export interface ModelEvent {
  readonly revision: number;
  readonly type: 'put' | 'delete';
  readonly key: string;
  readonly line: string;
}

export class WatchModel {
  revision = 0;
  compactRevision = 0;
  readonly events: ModelEvent[] = [];
  private readonly state = new Map<string, ModelKv>();

  /** Applies `command` and returns whether it is valid (an invalid compact changes nothing). */
  apply(command: Command): void {
    if (command.type === 'compact') {
      if (command.revision > this.compactRevision && command.revision <= this.revision) {
        this.compactRevision = command.revision;
      }
      return;
    }
    const next = this.revision + 1;
    const before = this.events.length;
    const ops: TxnOp[] = command.type === 'txn' ? [...command.success] : [command as TxnOp];
    for (const op of ops) {
      if (op.type === 'put') this.put(next, op.key, Buffer.from(op.value).toString('utf8'));
      else if (op.type === 'delete' && op.prefix === true) {
        const keys = [...this.state.keys()].filter((k) => k.startsWith(op.key));
        keys.sort((a, b) => compareBytes(utf8(a), utf8(b)));
        for (const key of keys) this.delete(next, key);
      } else if (op.type === 'delete') this.delete(next, op.key);
    }
    if (this.events.length > before) this.revision = next;
  }

  private put(revision: number, key: string, value: string): void {
    const prev = this.state.get(key);
    const version = (prev?.version ?? 0) + 1;
    this.state.set(key, { value, version });
    const line = `${revision} put ${key} ${value} v${version} prev=${prev?.value ?? '-'}`;
    this.events.push({ revision, type: 'put', key, line });
  }

  private delete(revision: number, key: string): void {
    const prev = this.state.get(key);
    if (prev === undefined) return;
    this.state.delete(key);
    this.events.push({ revision, type: 'delete', key, line: `${revision} delete ${key}  v0 prev=${prev.value}` });
  }
}

/** A random valid command: puts, deletes, prefix deletes, txns on distinct keys, compactions. */
export function randomCommand(random: Random, model: WatchModel, step: number): Command {
  const roll = randomInt(random, 0, 99);
  const value = (): Uint8Array => utf8(`v${step}-${randomInt(random, 0, 999)}`);
  if (roll < 50) return { type: 'put', key: pick(random, keyPool), value: value() };
  if (roll < 62) return { type: 'delete', key: pick(random, keyPool) };
  if (roll < 68) return { type: 'delete', key: pick(random, prefixPool), prefix: true };
  if (roll < 92 || model.revision <= model.compactRevision) {
    const keys = [...keyPool].filter(() => chance(random, 0.3));
    const success: TxnOp[] = keys.map((key) =>
      chance(random, 0.7) ? { type: 'put', key, value: value() } : { type: 'delete', key },
    );
    return { type: 'txn', compare: [], success, failure: [] };
  }
  const span = model.revision - model.compactRevision;
  return { type: 'compact', revision: model.compactRevision + randomInt(random, 1, Math.max(1, Math.floor(span / 2))) };
}

export function commandEntry(index: number, command: Command): Entry {
  const data = encodeCommand({ proposedAtMs: index, op: command }, defaultMvccLimits);
  return { index, term: 1, type: EntryType.normal, data };
}

/** A replica: an MVCC store on a MemoryEngine that survives "restarts" (a new store over it). */
export class Replica {
  readonly engine = new MemoryEngine();
  store = new MvccStore(this.engine);

  /** Applies up to `count` more entries of `log` in one batch; returns how many. */
  applyFrom(log: readonly Entry[], count: number): number {
    const from = this.store.appliedIndex;
    const batch = log.slice(from, from + count);
    if (batch.length > 0) this.store.applyBatch(batch);
    return batch.length;
  }

  restart(): void {
    this.store = new MvccStore(this.engine);
  }
}
