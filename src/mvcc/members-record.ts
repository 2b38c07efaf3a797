// The cell's member table (names and URLs) as replicated state. Membership itself (who votes)
// lives in the Raft log's configuration entries; the URLs travel in the enterJoint entry's
// context and are kept here, one record, so that they survive restarts and reach members that
// catch up by snapshot (the snapshot stream carries every engine entry). Opaque text to the store:
// src/membership/member-directory.ts defines and validates its JSON.
import type { KvReader, KvWriter } from './types.js';

/** Sorts right after the meta record (0x01) and before every table. */
export const membersKey = Uint8Array.of(0x02);
/** A member table is small (a few members); bound what one entry may make us store. */
export const membersRecordBytesMax = 64 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Applies a committed configuration entry: an enterJoint with a context replaces the record. */
export function applyMembersRecord(writer: KvWriter, entryData: Uint8Array): void {
  const context = enterJointContext(entryData);
  if (context === null) return;
  const bytes = encoder.encode(context);
  // The leader validates the size before proposing; a larger one is not stored (never half).
  if (bytes.length === 0 || bytes.length > membersRecordBytesMax) return;
  writer.put(membersKey, bytes);
}

/**
 * The context of an enterJoint configuration entry, else null. The Raft core already decoded
 * and checked the entry; any other shape (a test's opaque bytes) simply carries no member table.
 */
function enterJointContext(entryData: Uint8Array): string | null {
  let entry: { change?: { type?: unknown; context?: unknown } } | null;
  try {
    entry = JSON.parse(decoder.decode(entryData)) as typeof entry;
  } catch {
    return null;
  }
  const change = entry?.change;
  if (change?.type !== 'enterJoint' || typeof change.context !== 'string') return null;
  return change.context;
}

export function readMembersRecord(reader: KvReader): string | null {
  const stored = reader.get(membersKey);
  return stored === undefined ? null : decoder.decode(stored);
}
