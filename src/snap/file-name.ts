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
