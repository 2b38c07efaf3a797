// Snapshot file names: <index>-<term>.snap in 16 hex digits, so names sort by index.
import { assert } from '../base/assert.js';

const namePattern = /^([0-9a-f]{16})-([0-9a-f]{16})\.snap$/;
export const tmpSuffix = '.tmp';
export const partialSuffix = '.partial';

function hex16(value: number): string {
  assert(Number.isSafeInteger(value) && value >= 0, 'snapshot numbers are counts');
  return value.toString(16).padStart(16, '0');
}

export function snapshotFileName(index: number, term: number): string {
  return `${hex16(index)}-${hex16(term)}.snap`;
}

export function parseSnapshotFileName(name: string): { index: number; term: number } | null {
  const match = namePattern.exec(name);
  if (match === null) return null;
  return { index: parseInt(match[1] ?? '', 16), term: parseInt(match[2] ?? '', 16) };
}

/**
 * A partial download's name. With an identity (the sender's totalBytes and checksum) it is part
 * of the name, so a partial is resumed only by a transfer of exactly the same bytes.
 */
export function partialFileName(
  index: number,
  term: number,
  identity?: { totalBytes: number; checksum: number },
): string {
  const name = snapshotFileName(index, term);
  if (identity === undefined) return name + partialSuffix;
  assert(identity.checksum >= 0 && identity.checksum <= 0xffff_ffff, 'a u32 checksum');
  const checksum = identity.checksum.toString(16).padStart(8, '0');
  return `${name}.${hex16(identity.totalBytes)}-${checksum}${partialSuffix}`;
}

const partialPattern = /^([0-9a-f]{16}-[0-9a-f]{16}\.snap)(\.[0-9a-f]{16}-[0-9a-f]{8})?\.partial$/;

/** The index and term a partial download's name (either form) is for, or null. */
export function parsePartialFileName(name: string): { index: number; term: number } | null {
  const match = partialPattern.exec(name);
  return match === null ? null : parseSnapshotFileName(match[1] ?? '');
}
