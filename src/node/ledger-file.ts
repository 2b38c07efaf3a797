// The peer ledger on disk (src/raft/peer-ledger.ts): what each peer promised this member, kept in
// `<data-dir>/peer-ledger.json` so that it outlives a restart of this member. Without it, a member
// that restarted would have nothing to tell a peer that comes back on an older copy of its data.
// It holds member ids, terms and log indexes only (no key or value: not sealed by encryption at
// rest). Written at most every `everyMs` when it changed, whole, to a temporary file that is
// fsynced and renamed over the old one, so a crash leaves the old or the new file, never half of
// one. Its records are lower bounds, so an older file (a restored directory's) is safe: it only
// knows less.
import { readFileSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { CorruptFileError } from '../base/errors.js';
import type { MemberId, PeerRecord } from '../raft/index.js';

export const ledgerFileName = 'peer-ledger.json';
const formatVersion = 1;
const fields = ['term', 'ackTerm', 'ackIndex', 'voteTerm', 'votedFor'] as const;

type Records = readonly (readonly [MemberId, PeerRecord])[];

/** The saved ledger, or none when the file does not exist; a damaged file stops the node naming it. */
export function readLedgerFile(dataDir: string): Records {
  const path = join(dataDir, ledgerFileName);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CorruptFileError(path, 0, `not JSON (${(error as Error).message}); delete it to start without it`);
  }
  const file = parsed as { version?: unknown; peers?: unknown };
  if (file?.version !== formatVersion || !Array.isArray(file.peers)) {
    throw new CorruptFileError(path, 0, `expected {"version": ${formatVersion}, "peers": [...]}`);
  }
  return file.peers.map((entry: unknown, i: number) => {
    const peer = entry as Record<string, unknown>;
    const bad = ['id', ...fields].find((name) => !Number.isSafeInteger(peer?.[name]) || (peer[name] as number) < 0);
    if (bad !== undefined) throw new CorruptFileError(path, 0, `peers[${i}].${bad} is not a whole number`);
    const record = Object.fromEntries(fields.map((name) => [name, peer[name] as number])) as unknown as PeerRecord;
    if (record.ackTerm > record.term || record.voteTerm > record.term) {
      throw new CorruptFileError(path, 0, `peers[${i}] has a term past its own term ${record.term}`);
    }
    return [peer.id as number, record] as const;
  });
}

/** Writes the file whole and durably (temporary file, fsync, rename, fsync of the directory). */
export async function writeLedgerFile(dataDir: string, records: Records): Promise<void> {
  const path = join(dataDir, ledgerFileName);
  const temporary = `${path}.tmp`;
  const text = JSON.stringify({ version: formatVersion, peers: records.map(([id, record]) => ({ id, ...record })) });
  const file = await open(temporary, 'w');
  try {
    await file.writeFile(text);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temporary, path);
  const dir = await open(dataDir, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/**
 * Saves the ledger when it changed, at most every `everyMs` (off the event loop: the writes and
 * fsyncs run in libuv's pool), and once more at stop.
 */
export class LedgerFileKeeper {
  private saved = -1;
  private saving: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly dataDir: string,
    private readonly source: { ledger(): { readonly version: number; readonly records: Records } },
    private readonly onError: (error: Error) => void,
    everyMs = 500,
  ) {
    this.timer = setInterval(() => void this.save(), everyMs);
    this.timer.unref();
  }

  save(): Promise<void> {
    if (this.saving !== null) return this.saving;
    const { version, records } = this.source.ledger();
    if (version === this.saved) return Promise.resolve();
    this.saving = writeLedgerFile(this.dataDir, records).then(
      () => void (this.saved = version),
      // Not fatal: the ledger guards against peers' restarts; the next round tries again.
      (error: unknown) => this.onError(error as Error),
    ).finally(() => (this.saving = null));
    return this.saving;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.saving;
    await this.save();
  }
}
