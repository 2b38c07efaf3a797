// A fencing guard on disk (LMDB): the check and the update happen in one synchronous write
// transaction, so two writers racing with different tokens cannot both pass, and the highest
// token survives a restart of the protected service (a restart must not re-admit a stale owner).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import type { FencingGuard, FencingVerdict } from './types.js';
import { validToken } from './memory-guard.js';

export class LmdbFencingGuard implements FencingGuard {
  readonly counts = { accepted: 0, rejected: 0 };

  private constructor(private readonly db: RootDatabase<number, string>) {}

  /** Opens (or creates) the guard's store in `directory`. */
  static open(directory: string): LmdbFencingGuard {
    mkdirSync(directory, { recursive: true });
    const db = open<number, string>({ path: join(directory, 'fencing.mdb'), encoding: 'ordered-binary' });
    return new LmdbFencingGuard(db);
  }

  check(resource: string, token: number): FencingVerdict {
    validToken(token);
    const verdict = this.db.transactionSync((): FencingVerdict => {
      const highest = this.db.get(resource) ?? 0;
      if (token < highest) return { accepted: false, token, highest } as const;
      if (token > highest) this.db.putSync(resource, token);
      return { accepted: true, token } as const;
    });
    if (verdict.accepted) this.counts.accepted++;
    else this.counts.rejected++;
    return verdict;
  }

  highest(resource: string): number {
    return this.db.get(resource) ?? 0;
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
