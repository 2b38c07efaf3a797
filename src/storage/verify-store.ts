// Reads every page a store's current tree reaches, in a child process: LMDB trusts its file and
// aborts the process on a damaged page (an assertion in the cursor code), so a tree restored
// after an OS crash is walked by a child first. A child that dies or fails names the file;
// the node refuses to start instead of aborting later with a bare assertion, or serving it.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CorruptFileError } from '../base/errors.js';

const childScript = fileURLToPath(new URL('./verify-store-child.js', import.meta.url));

/** Throws CorruptFileError unless every entry of the store at `path` (its current tree) reads back. */
export function verifyStoreFile(path: string, pageSize: number, encryptionKey?: string): { entries: number } {
  const child = spawnSync(process.execPath, [childScript, path, String(pageSize)], {
    encoding: 'utf8',
    // The data key goes through the child's stdin, never its arguments (visible to every user).
    input: encryptionKey ?? '',
    maxBuffer: 1024 * 1024,
  });
  const entries = /^entries (\d+)$/m.exec(child.stdout ?? '');
  if (child.status === 0 && entries !== null) return { entries: Number(entries[1]) };
  const why = child.signal !== null ? `signal ${child.signal}` : `exit ${child.status}`;
  const detail = (child.stderr ?? '').trim().split('\n').slice(-3).join(' | ');
  throw new CorruptFileError(path, 0, `LMDB could not read the checkpointed tree (${why}: ${detail || 'no message'})`);
}
