// Temporary directories for LMDB tests, removed afterwards.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function withTempDir<T>(body: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-storage-'));
  return body(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}
