// History events that keep their previous value sealed as it already was (docs/design/encryption.md
// "One seal per put"). A format-2 event is `tag | varint + key | [prevKv record]`, and its prevKv
// record is, byte for byte, the key's current record that the same apply just replaced: the store
// sealed those bytes when it wrote them. Sealing them again cost one AES-GCM call of each put for
// nothing, so the event keeps the sealed bytes instead:
//   u8 0xE6 | tag | varint + key | [the replaced current record as sealed: 0xE5 ..., AAD its current-table key]
// The tag and the key are in plaintext, as the key already is in the current and revision-index
// tables' keys (LMDB orders them). The value keeps its binding to its key: the embedded record
// opens only under `currentKey(key)`, so a value moved to another key's event does not open.
// The event's position (its revision) is no longer bound by additional data; like a record's
// presence, the store never authenticated it (an attacker who can write the file can drop or
// roll back records in either form).
import { compactEventHead, currentKey } from '../mvcc/index.js';

export const eventMarker = 0xe6;

export interface EventHead {
  /** tag | varint + key, as the plaintext event starts. */
  readonly head: Uint8Array;
  readonly keyBytes: Uint8Array;
  readonly hasPrev: boolean;
}

/**
 * The head of a plaintext format-2 event, or null for anything else (a format-1 event, or bytes
 * that do not parse: those are sealed whole, as before).
 */
export function plainEventHead(event: Uint8Array): EventHead | null {
  const head = compactEventHead(event);
  return head === null ? null : { head: event.subarray(0, head.headBytes), keyBytes: head.key, hasPrev: head.hasPrev };
}

/** The head of a stored 0xE6 event (after its marker), and its embedded sealed record, if any. */
export function storedEventParts(stored: Uint8Array): { head: EventHead; sealedPrev: Uint8Array | null } | null {
  if (stored[0] !== eventMarker) return null;
  const head = plainEventHead(stored.subarray(1));
  if (head === null) return null;
  const rest = stored.subarray(1 + head.head.length);
  if (head.hasPrev !== (rest.length > 0)) return null;
  return { head, sealedPrev: head.hasPrev ? rest : null };
}

/** The stored form: the marker, the plaintext head, the sealed prevKv record when there is one. */
export function storedEvent(head: Uint8Array, sealedPrev: Uint8Array | null): Uint8Array {
  const out = Buffer.allocUnsafe(1 + head.length + (sealedPrev?.length ?? 0));
  out[0] = eventMarker;
  out.set(head, 1);
  if (sealedPrev !== null) out.set(sealedPrev, 1 + head.length);
  return out;
}

/** Where the event's previous value was sealed: its key's current-table key (the AAD it opens under). */
export function prevRecordKey(head: EventHead): Uint8Array {
  return currentKey(head.keyBytes);
}
