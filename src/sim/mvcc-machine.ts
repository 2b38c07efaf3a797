// The real MVCC state machine (src/mvcc, on the in-memory engine) as the simulator's replicated
// state machine: simulated clusters apply real MVCC commands, and the checker compares the
// store's content hash across members at equal applied indexes. The client's write to register
// k is an MVCC put of `/sim/k` whose value is the command id.
import { assert } from '../base/assert.js';
import { BatonError } from '../base/errors.js';
import {
  type ApplyOutcome,
  type MvccBugs,
  type MvccLimits,
  MemoryEngine,
  MvccStore,
  decodeCommand,
  defaultMvccLimits,
  encodeCommand,
  fromUtf8,
  utf8,
} from '../mvcc/index.js';
import type { Entry } from '../raft/index.js';
import type { Applier, SimStateMachine, WriteCommand } from './types.js';
import type { TenantQuotaCheck } from './tenant-quota-check.js';

const keyPrefix = '/sim/';

/**
 * A fresh adapter per run: it remembers at which log index each command id was applied. The
 * limits are the cell's (the lease workload lowers the minimum TTL to the sim's time scale).
 * The content hash is a full pass over the store: `hashEvery` > 1 compares members only at
 * indexes that are multiples of it (a divergence persists, so it is still caught, a little later).
 */
export function mvccStateMachine(
  limits: MvccLimits = defaultMvccLimits,
  hashEvery = 1,
  bugs: MvccBugs = {},
  /** Tenants in every member's first state, checked after each applied entry (#28); null: none. */
  tenants: TenantQuotaCheck | null = null,
): SimStateMachine {
  // By state machine safety every member applies a command at the same index, so one map
  // serves all members, including ones that only received it inside a snapshot.
  const indexOfCommand = new Map<number, number>();
  return {
    createApplier: () => new MvccApplier(indexOfCommand, limits, hashEvery, bugs, tenants),
    encodeWrite: (command: WriteCommand) =>
      encodeCommand(
        {
          // The client may resend a write: the Request-ID makes MVCC apply it once.
          requestId: `c${command.commandId}`,
          proposedAtMs: 0,
          op: { type: 'put', key: keyPrefix + command.key, value: utf8(String(command.commandId)) },
        },
        limits,
      ),
    decodeWrite: (data: Uint8Array) => decodeWrite(data, limits),
    effectiveIndexOf: (commandId: number) => indexOfCommand.get(commandId),
  };
}

function decodeWrite(data: Uint8Array, limits: MvccLimits): WriteCommand | null {
  if (data.byteLength === 0) return null;
  const { op } = decodeCommand(data, limits);
  if (op.type !== 'put' || !op.key.startsWith(keyPrefix)) return null;
  return { key: op.key.slice(keyPrefix.length), commandId: Number(fromUtf8(op.value)) };
}

export class MvccApplier implements Applier {
  private current: MvccStore;
  private hashCache: { index: number; hash: number } = { index: -1, hash: 0 };
  /** What the last apply() answered (the lease service and its checker read it). */
  lastOutcome: ApplyOutcome | null = null;

  constructor(
    private readonly indexOfCommand: Map<number, number>,
    private readonly limits: MvccLimits,
    private readonly hashEvery: number,
    /** Test-only broken store rules (teeth). */
    private readonly bugs: MvccBugs = {},
    private readonly tenants: TenantQuotaCheck | null = null,
  ) {
    this.current = this.freshStore();
  }

  private freshStore(): MvccStore {
    const engine = new MemoryEngine();
    this.tenants?.bootstrap(engine);
    return new MvccStore(engine, this.limits, this.bugs);
  }

  /** The store now (restore() replaces it). */
  get store(): MvccStore {
    return this.current;
  }

  apply(entry: Entry): void {
    this.lastOutcome = null;
    const before = this.tenants?.usageOf(this.store) ?? null;
    const [outcome] = this.store.applyBatch([entry]);
    assert(outcome !== undefined && this.store.appliedIndex === entry.index, 'the store applied the entry');
    if (before !== null) this.tenants?.afterApply(this.store, entry.index, before, outcome);
    // A refused command (a put naming an expired lease, a second revocation) is an answer to its
    // client, not a fault; anything else failing is a bug.
    if (outcome.type === 'failed' && !(outcome.error instanceof BatonError)) throw outcome.error;
    this.lastOutcome = outcome;
    const write = entry.type === 0 && !(outcome.type === 'applied' && outcome.duplicate) ? decodeWrite(entry.data, this.limits) : null;
    if (write !== null) {
      const known = this.indexOfCommand.get(write.commandId);
      assert(known === undefined || known === entry.index, `command ${write.commandId} applied at one index`);
      this.indexOfCommand.set(write.commandId, entry.index);
    }
  }

  appliedIndex(): number {
    return this.store.appliedIndex;
  }

  /** The store's content hash (48 of its 64 bits, as a number), recomputed once per index. */
  appliedHash(): number {
    if (this.hashCache.index !== this.store.appliedIndex) {
      const sampled = this.store.appliedIndex % this.hashEvery === 0;
      const hash = sampled ? parseInt(this.store.hash().slice(0, 12), 16) : 0;
      this.hashCache = { index: this.store.appliedIndex, hash };
    }
    return this.hashCache.hash;
  }

  snapshot(): Uint8Array {
    const parts = [...this.store.snapshot().chunks];
    const bytes = new Uint8Array(parts.reduce((n, part) => n + part.byteLength, 0));
    let at = 0;
    for (const part of parts) {
      bytes.set(part, at);
      at += part.byteLength;
    }
    return bytes;
  }

  restore(data: Uint8Array, index: number): void {
    this.current = this.freshStore();
    if (data.byteLength > 0) this.store.restore([data]);
    assert(this.store.appliedIndex === index, `snapshot data is at ${this.store.appliedIndex}, its meta says ${index}`);
    this.hashCache = { index: -1, hash: 0 };
  }

  readVersion(key: string): number {
    // A prefix read of the exact key: an absent key is an empty answer, not an error.
    const result = this.store.range({ type: 'get', key: keyPrefix + key, prefix: true });
    const kv = result.kvs.find((found) => found.key === keyPrefix + key);
    if (kv === undefined) return 0;
    const index = this.indexOfCommand.get(Number(fromUtf8(kv.value)));
    assert(index !== undefined, 'a stored command id was applied somewhere');
    return index;
  }
}
