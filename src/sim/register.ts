// The sim's replicated state machine: a set of registers, each remembering the log index of its
// last write. That index is the "version" a linearizable read must not go below. A running hash
// over every applied entry travels through snapshots, so a member restored from a snapshot is
// still compared, entry by entry, with every other member.
import { assert } from '../base/assert.js';
import type { Entry } from '../raft/index.js';
import { EntryType } from '../raft/index.js';
import { hashChain, hashEntry } from './hash.js';
import type { Applier, SimStateMachine, WriteCommand } from './types.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const writeTag = 0x57; // 'W'

const keyBytesCache = new Map<string, Uint8Array>();
const twoTo32 = 2 ** 32;

/** [tag, keyLength, ...key, commandId as 8 bytes]: small and cheap, so the bench measures the core. */
export function encodeWrite(command: WriteCommand): Uint8Array {
  let key = keyBytesCache.get(command.key);
  if (key === undefined) {
    key = encoder.encode(command.key);
    keyBytesCache.set(command.key, key);
  }
  assert(key.length < 256, 'register keys are short');
  assert(
    Number.isSafeInteger(command.commandId) && command.commandId > 0,
    'command ids are positive',
  );
  const bytes = new Uint8Array(2 + key.length + 8);
  bytes[0] = writeTag;
  bytes[1] = key.length;
  bytes.set(key, 2);
  writeUint32(bytes, 2 + key.length, Math.floor(command.commandId / twoTo32));
  writeUint32(bytes, 6 + key.length, command.commandId >>> 0);
  return bytes;
}

export function decodeWrite(data: Uint8Array): WriteCommand | null {
  if (data.length < 10 || data[0] !== writeTag) return null;
  const keyLength = data[1] as number;
  assert(data.length === 2 + keyLength + 8, 'a write command has its exact length');
  // The sim's keys are ASCII, so one char code per byte.
  let key = '';
  for (let i = 2; i < 2 + keyLength; i++) key += String.fromCharCode(data[i] as number);
  const commandId = readUint32(data, 2 + keyLength) * twoTo32 + readUint32(data, 6 + keyLength);
  return { key, commandId };
}

function writeUint32(bytes: Uint8Array, offset: number, value: number): void {
  bytes[offset] = value >>> 24;
  bytes[offset + 1] = (value >>> 16) & 0xff;
  bytes[offset + 2] = (value >>> 8) & 0xff;
  bytes[offset + 3] = value & 0xff;
}

function readUint32(bytes: Uint8Array, offset: number): number {
  return (
    ((bytes[offset] as number) * 0x1000000 +
      (((bytes[offset + 1] as number) << 16) |
        ((bytes[offset + 2] as number) << 8) |
        (bytes[offset + 3] as number))) >>>
    0
  );
}

interface SnapshotShape {
  readonly index: number;
  readonly hash: number;
  readonly registers: readonly (readonly [string, number, number])[];
}

export class RegisterMachine implements Applier {
  // Invariant: every register's version is <= applied.
  private applied = 0;
  private hash = 0;
  private readonly versions = new Map<string, { version: number; commandId: number }>();

  apply(entry: Entry): void {
    assert(
      entry.index === this.applied + 1,
      `apply in order: ${entry.index} after ${this.applied}`,
    );
    this.applied = entry.index;
    this.hash = hashChain(this.hash, entry.index, hashEntry(entry.term, entry.type, entry.data));
    if (entry.type !== EntryType.normal) return;
    const command = decodeWrite(entry.data);
    if (command === null) return;
    this.versions.set(command.key, { version: entry.index, commandId: command.commandId });
  }

  appliedIndex(): number {
    return this.applied;
  }

  appliedHash(): number {
    return this.hash;
  }

  snapshot(): Uint8Array {
    // Sorted by key so two members with the same state produce the same bytes.
    const registers = [...this.versions.entries()]
      .map(([key, v]) => [key, v.version, v.commandId] as const)
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const shape: SnapshotShape = { index: this.applied, hash: this.hash, registers };
    return encoder.encode(JSON.stringify(shape));
  }

  restore(data: Uint8Array, index: number): void {
    const shape = JSON.parse(decoder.decode(data)) as SnapshotShape;
    assert(shape.index === index, `snapshot data is at ${shape.index}, its meta says ${index}`);
    this.applied = shape.index;
    this.hash = shape.hash;
    this.versions.clear();
    for (const [key, version, commandId] of shape.registers) {
      assert(version <= index, 'a register version is never past the snapshot');
      this.versions.set(key, { version, commandId });
    }
  }

  readVersion(key: string): number {
    return this.versions.get(key)?.version ?? 0;
  }
}

/** The empty snapshot a member starts from when it has none (index 0). */
export function emptyRegisterSnapshot(): Uint8Array {
  return new RegisterMachine().snapshot();
}

export const registerStateMachine: SimStateMachine = {
  createApplier: () => new RegisterMachine(),
  encodeWrite,
  decodeWrite,
};
