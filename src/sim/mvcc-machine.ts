// The real MVCC state machine (src/mvcc, on the in-memory engine) as the simulator's replicated
// state machine: simulated clusters apply real MVCC commands, and the checker compares the
// store's content hash across members at equal applied indexes. The client's write to register
// k is an MVCC put of `/sim/k` whose value is the command id.
import { assert } from '../base/assert.js';
import {
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

const keyPrefix = '/sim/';

/** A fresh adapter per run: it remembers at which log index each command id was applied. */
export function mvccStateMachine(): SimStateMachine {
  // By state machine safety every member applies a command at the same index, so one map
  // serves all members, including ones that only received it inside a snapshot.
  const indexOfCommand = new Map<number, number>();
  return {
    createApplier: () => new MvccApplier(indexOfCommand),
    encodeWrite: (command: WriteCommand) =>
      encodeCommand(
        {
          // The client may resend a write: the Request-ID makes MVCC apply it once.
          requestId: `c${command.commandId}`,
          proposedAtMs: 0,
          op: { type: 'put', key: keyPrefix + command.key, value: utf8(String(command.commandId)) },
        },
        defaultMvccLimits,
      ),
    decodeWrite,
  };
}

function decodeWrite(data: Uint8Array): WriteCommand | null {
  if (data.byteLength === 0) return null;
  const { op } = decodeCommand(data, defaultMvccLimits);
  if (op.type !== 'put' || !op.key.startsWith(keyPrefix)) return null;
  return { key: op.key.slice(keyPrefix.length), commandId: Number(fromUtf8(op.value)) };
}

class MvccApplier implements Applier {
  private store = new MvccStore(new MemoryEngine(), defaultMvccLimits);
  private hashCache: { index: number; hash: number } = { index: -1, hash: 0 };

  constructor(private readonly indexOfCommand: Map<number, number>) {}

  apply(entry: Entry): void {
    const [outcome] = this.store.applyBatch([entry]);
    assert(outcome !== undefined && this.store.appliedIndex === entry.index, 'the store applied the entry');
    if (outcome.type === 'failed') throw outcome.error;
    const write = entry.type === 0 && !(outcome.type === 'applied' && outcome.duplicate) ? decodeWrite(entry.data) : null;
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
      const hash = parseInt(this.store.hash().slice(0, 12), 16);
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
    this.store = new MvccStore(new MemoryEngine(), defaultMvccLimits);
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
