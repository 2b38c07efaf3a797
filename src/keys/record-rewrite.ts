// The background rewrite that retires an old data key of a store that seals its records
// (docs/design/encryption.md "Rotation"). After `baton keys rotate --data-key` and a restart, new
// records are sealed under the new (active) data key while old ones still name the old key. This
// pass walks the sealed tables in key order in small write transactions (a bounded number of
// records each, with a pause after each so applies are never held up for long), seals every value
// that names another key again under the active one, and records its cursor in
// `db/records-rewrite.json` so a restart resumes it. When a pass reaches the end, no record names an
// old key (applies only ever seal under the active key, behind the cursor as in front of it); after
// a checkpoint has made that durable, the file says which keys are retired, and `baton keys retire`
// may remove them from `records.key`.
//
// Crash safety: every slice is one LMDB transaction (a value is replaced by the same plaintext
// under another key, atomically). The cursor file is only a hint for where to resume: it is
// trusted only within the same boot, because after an OS crash the store goes back to its last
// checkpoint (storage/checkpointer.ts), which may hold old-key records behind a newer cursor; the
// pass then starts again from the beginning. "Retired" is written (fsynced) only after a
// checkpoint that began after the pass ended, so no tree the store can go back to holds an old key.
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Timers } from '../base/timers.js';
import { tablesWithData, type KvEngine } from '../mvcc/index.js';
import type { RecordSealer } from './sealed-engine.js';

export const rewriteStatusFileName = 'records-rewrite.json';
const format = 1;
/** The sealed tables lie below this key byte ('k' + 1): the pass scans [0x02, 0x6c). */
const scanStart = Uint8Array.of(0x02);
const scanEnd = Uint8Array.of(0x6c);

export interface RewriteStatus {
  readonly format: number;
  /** The data key records are being moved to, and its id (dataKeyId: which store this file is of). */
  readonly activeNo: number;
  readonly activeKeyId: string;
  /** The data keys this pass moves records away from. */
  readonly retiring: readonly number[];
  /** 'running' (cursor valid), 'checkpointing' (the pass ended, waiting for durability), 'done'. */
  readonly state: 'running' | 'checkpointing' | 'done';
  /** The last key done (hex), or null at the start of the pass. */
  readonly cursor: string | null;
  /** The table the cursor is in (a byte), for `baton keys status`. */
  readonly table: number | null;
  readonly scanned: number;
  readonly rewritten: number;
  /** The OS boot the cursor belongs to (null: the store commits synced, a boot changes nothing). */
  readonly bootId: string | null;
  readonly startedAt: string;
  readonly updatedAt: string;
  /** Data keys no record of this store names any more, durably (set when state is 'done'). */
  readonly retired: readonly number[];
}

export interface RecordRewriteOptions {
  /** The raw engine under the sealed one (values as stored). */
  readonly engine: KvEngine;
  readonly sealer: RecordSealer;
  /** Every data key number records.key holds. */
  readonly keyNos: readonly number[];
  /** dataKeyId of the active data key. */
  readonly activeKeyId: string;
  /** The store's directory (db/): the status file goes beside records.key. */
  readonly directory: string;
  readonly bootId: string | null;
  /** Makes every commit so far durable (the engine's checkpoint). */
  readonly checkpoint: () => Promise<unknown>;
  readonly timers: Timers;
  readonly log: { info(message: string): void; warn(message: string): void };
  readonly nowIso?: () => string;
  /** Records per transaction (default 256) and the least pause between two (default 20 ms). */
  readonly sliceRecords?: number;
  readonly pauseMs?: number;
  /** Called with the stopping error when a slice fails (a damaged record): the node stops. */
  readonly onFatal?: (error: Error) => void;
}

export function rewriteStatusPath(directory: string): string {
  return join(directory, rewriteStatusFileName);
}

/** The status file of the store in `directory`, or null when no rewrite ever ran there. */
export function readRewriteStatus(directory: string): RewriteStatus | null {
  const path = rewriteStatusPath(directory);
  if (!existsSync(path)) return null;
  let value: Partial<RewriteStatus>;
  try {
    value = JSON.parse(readFileSync(path, 'utf8')) as Partial<RewriteStatus>;
  } catch {
    return null; // A hint only: an unreadable file means "start the pass again".
  }
  const ok = value.format === format && Number.isInteger(value.activeNo) && typeof value.activeKeyId === 'string' && Array.isArray(value.retiring) && Array.isArray(value.retired)
    && ['running', 'checkpointing', 'done'].includes(value.state as string) && Number.isSafeInteger(value.scanned) && Number.isSafeInteger(value.rewritten);
  return ok ? value as RewriteStatus : null;
}

export class RecordRewriter {
  private status: RewriteStatus;
  private timer: { cancel(): void } | null = null;
  private stopped = false;
  private lastSavedMs = 0;
  private readonly sliceRecords: number;
  private readonly pauseMs: number;
  private readonly nowIso: () => string;
  private onFatal: ((error: Error) => void) | undefined;

  constructor(private readonly options: RecordRewriteOptions) {
    this.sliceRecords = options.sliceRecords ?? 256;
    this.pauseMs = options.pauseMs ?? 20;
    this.nowIso = options.nowIso ?? (() => new Date().toISOString());
    this.onFatal = options.onFatal;
    const activeNo = options.sealer.activeNo;
    const retiring = options.keyNos.filter((no) => no !== activeNo).sort((a, b) => a - b);
    const saved = readRewriteStatus(options.directory);
    const now = this.nowIso();
    const fresh: RewriteStatus = {
      format, activeNo, activeKeyId: options.activeKeyId, retiring, state: 'running', cursor: null, table: null, scanned: 0, rewritten: 0,
      bootId: options.bootId, startedAt: now, updatedAt: now, retired: [],
    };
    if (retiring.length === 0) {
      this.status = { ...fresh, state: 'done' };
    } else if (saved !== null && saved.activeNo === activeNo && saved.activeKeyId === options.activeKeyId && sameNumbers(saved.retiring, retiring)
      && (saved.state === 'done' || saved.bootId === options.bootId)) {
      // The same pass, in the same boot (or finished durably): resume it. A pass that had ended but
      // not yet been checkpointed only needs the checkpoint.
      this.status = saved.state === 'checkpointing' ? { ...saved, bootId: options.bootId } : saved;
    } else {
      this.status = fresh;
    }
  }

  /** What `baton keys status` shows (also read from the file by the command). */
  current(): RewriteStatus {
    return this.status;
  }

  /** Whether there is work left (a pass to run or its checkpoint to wait for). */
  get pending(): boolean {
    return this.status.state !== 'done';
  }

  /** Runs the pass in the background; `onFatal` hears a damaged record (the node stops on it). */
  start(onFatal?: (error: Error) => void): void {
    if (onFatal !== undefined) this.onFatal = onFatal;
    if (!this.pending) return;
    const { retiring, activeNo, cursor } = this.status;
    this.options.log.info(`encryption at rest: rewriting the records sealed under data key ${retiring.join(', ')} under data key ${activeNo}` +
      (cursor === null ? '' : ` (resuming after ${this.status.scanned} records)`));
    this.save(false);
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = null;
    if (this.status.state === 'running') this.save(false);
  }

  /**
   * One slice: up to sliceRecords records after the cursor in one write transaction. Returns
   * true when the pass has reached the end of the sealed tables.
   */
  step(): boolean {
    if (this.status.state !== 'running') return true;
    const { engine, sealer } = this.options;
    const start = this.status.cursor === null ? scanStart : successor(Buffer.from(this.status.cursor, 'hex'));
    const limit = this.sliceRecords;
    const result = engine.write((writer) => {
      const batch: { key: Uint8Array; value: Uint8Array }[] = [];
      for (const entry of writer.range({ start, end: scanEnd })) {
        // Copies: the engine may reuse its buffers, and the puts below change the tree.
        batch.push({ key: Uint8Array.from(entry.key), value: Uint8Array.from(entry.value) });
        if (batch.length >= limit) break;
      }
      let rewritten = 0;
      for (const { key, value } of batch) {
        if (!tablesWithData.has(key[0] as number)) continue;
        const resealed = sealer.reseal(key, value);
        if (resealed === null) continue;
        writer.put(key, resealed);
        rewritten++;
      }
      return { scanned: batch.length, rewritten, last: batch.at(-1)?.key ?? null, ended: batch.length < limit };
    });
    this.status = {
      ...this.status,
      cursor: result.last === null ? this.status.cursor : Buffer.from(result.last).toString('hex'),
      table: result.last === null ? this.status.table : result.last[0] as number,
      scanned: this.status.scanned + result.scanned,
      rewritten: this.status.rewritten + result.rewritten,
      state: result.ended ? 'checkpointing' : 'running',
      updatedAt: this.nowIso(),
    };
    return result.ended;
  }

  /** After the pass: a checkpoint, then "retired", written durably. */
  async finish(): Promise<void> {
    if (this.status.state === 'done' || this.stopped) return;
    this.save(false);
    await this.options.checkpoint();
    if (this.stopped) return;
    this.status = { ...this.status, state: 'done', retired: this.status.retiring, updatedAt: this.nowIso() };
    this.save(true);
    this.options.log.info(`encryption at rest: no record names data key ${this.status.retired.join(', ')} any more ` +
      `(${this.status.rewritten} rewritten of ${this.status.scanned} scanned, checkpointed); ` +
      '`baton keys retire` removes it from records.key');
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = this.options.timers.setTimeout(() => this.tick(), ms);
  }

  private tick(): void {
    this.timer = null;
    if (this.stopped) return;
    if (this.status.state === 'checkpointing') {
      this.finish().catch((error: Error) => {
        // A failed checkpoint: try again later (the claim is never written before one succeeds).
        if (!this.stopped) this.options.log.warn(`encryption at rest: rewrite checkpoint failed (${error.message}); retrying`);
        this.schedule(1_000);
      });
      return;
    }
    const began = this.options.timers.monotonicMs();
    let ended: boolean;
    try {
      ended = this.step();
    } catch (error) {
      this.stopped = true;
      this.options.log.warn(`encryption at rest: the rewrite stopped: ${(error as Error).message}`);
      this.onFatal?.(error as Error);
      return;
    }
    const took = this.options.timers.monotonicMs() - began;
    if (this.options.timers.monotonicMs() - this.lastSavedMs >= 1_000) this.save(false);
    // At most about a quarter of the thread: pause three times as long as the slice took.
    this.schedule(ended ? 0 : Math.max(this.pauseMs, 3 * took));
  }

  private save(durable: boolean): void {
    this.lastSavedMs = this.options.timers.monotonicMs();
    try {
      writeStatus(rewriteStatusPath(this.options.directory), this.status, durable);
    } catch (error) {
      if (durable) throw error;
      this.options.log.warn(`encryption at rest: rewrite progress not saved (${(error as Error).message})`);
    }
  }
}

function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((n, i) => n === b[i]);
}

/** The smallest key after `key`. */
function successor(key: Uint8Array): Uint8Array {
  const out = new Uint8Array(key.length + 1);
  out.set(key);
  return out;
}

function writeStatus(path: string, status: RewriteStatus, durable: boolean): void {
  const temp = `${path}.tmp`;
  const fd = openSync(temp, 'w', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(status)}\n`);
    if (durable) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  if (!durable) return;
  const dir = openSync(dirname(path), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}
