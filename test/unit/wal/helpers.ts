// Shared helpers for the WAL tests: temp data dirs that are always removed, deterministic entries
// whose bytes can be checked after recovery, and a logger that keeps its lines.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Entry } from '../../../src/raft/index.js';
import type { WalLogger } from '../../../src/wal/index.js';

export async function withTempDir<T>(run: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-wal-'));
  try {
    return await run(dir);
  } finally {
    if (process.env['BATON_KEEP_TMP'] === undefined) rmSync(dir, { recursive: true, force: true });
  }
}

/** Entry bytes derived from (index, term, size): recovery can be checked byte for byte. */
export function makeEntry(index: number, term: number, size = 32): Entry {
  const data = new Uint8Array(size);
  for (let i = 0; i < size; i++) data[i] = (index * 31 + term * 7 + i) & 0xff;
  return { index, term, type: 0, data };
}

export function entryKey(entry: Entry): string {
  return `${entry.index}/${entry.term}/${entry.type}/${Buffer.from(entry.data).toString('base64')}`;
}

export class MemoryLogger implements WalLogger {
  readonly lines: string[] = [];
  warn(message: string): void {
    this.lines.push(message);
  }
}
