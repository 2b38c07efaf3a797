// Segment file names: <seq>-<firstIndex>.wal in 16 hex digits, so a directory listing sorts in
// log order and a name that disagrees with its header is caught at recovery.
import { assert } from '../base/assert.js';

const namePattern = /^([0-9a-f]{16})-([0-9a-f]{16})\.wal$/;
export const tmpSuffix = '.tmp';
/** The next segment, zero-filled ahead of time so a rollover does not stall appends. */
export const spareFileName = 'next.spare';

function hex16(value: number): string {
  assert(Number.isSafeInteger(value) && value >= 0, 'segment numbers are counts');
  return value.toString(16).padStart(16, '0');
}

export function segmentFileName(seq: number, firstIndex: number): string {
  return `${hex16(seq)}-${hex16(firstIndex)}.wal`;
}

export function parseSegmentFileName(name: string): { seq: number; firstIndex: number } | null {
  const match = namePattern.exec(name);
  if (match === null) return null;
  return { seq: parseInt(match[1] ?? '', 16), firstIndex: parseInt(match[2] ?? '', 16) };
}
