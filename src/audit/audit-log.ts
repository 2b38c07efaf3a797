// The audit log (issue 25): one JSON object per line in a file the operator names, appended in
// order and fdatasync'd in batches; an audited operation is answered only once its record is
// durable (the proposer waits on flushed()). Rotated by size: FILE becomes FILE.1 (FILE.1 becomes
// FILE.2, ... up to `keep`). It never drops a record silently: once a write fails the log is
// failed for good (until a restart), and the node refuses audited operations with 503.
import { open, rename, stat, type FileHandle } from 'node:fs/promises';
import { UnavailableError } from '../base/errors.js';

export interface AuditRecord {
  /** What happened: policy, lease-revoke, lock-release, compact, upgrade, membership, snapshot-save, denied. */
  readonly event: string;
  /** Who asked ('' anonymous; null: the cell's own work). */
  readonly principal: string | null;
  /** The client's source address ("IP:port"; null: unknown, the cell's own work or an entry of an older version). */
  readonly address?: string | null;
  /** The log index of a committed change (every member writes the same record for it). */
  readonly index?: number;
  readonly revision?: number;
  /** ok, or the error code the operation ended with (permission_denied, ...). */
  readonly result: string;
  /** The key or range, the member, the lease: what the operation was about. */
  readonly detail?: Readonly<Record<string, unknown>>;
}

export interface AuditLogOptions {
  readonly path: string;
  readonly member: number;
  readonly cell: string;
  /** Rotate before the file would grow past this. */
  readonly maxBytes: number;
  /** Rotated files kept (FILE.1 .. FILE.keep). */
  readonly keep: number;
  readonly nowMs?: () => number;
}

export class AuditLog {
  private queue: string[] = [];
  private waiters: { resolve: () => void; reject: (error: Error) => void }[] = [];
  private writing: Promise<void> | null = null;
  private failure: Error | null = null;

  private constructor(
    private handle: FileHandle,
    private size: number,
    private readonly options: AuditLogOptions,
  ) {}

  static async open(options: AuditLogOptions): Promise<AuditLog> {
    const handle = await open(options.path, 'a');
    const size = (await stat(options.path)).size;
    return new AuditLog(handle, size, options);
  }

  get failed(): boolean {
    return this.failure !== null;
  }

  /** The refusal of an audited operation once the log cannot be written; null while it can. */
  refusal(): UnavailableError | null {
    return this.failure === null ? null : this.unwritable();
  }

  /** Throws unavailable once the log cannot be written: audited operations are refused. */
  checkWritable(): void {
    const refused = this.refusal();
    if (refused !== null) throw refused;
  }

  record(record: AuditRecord): void {
    if (this.failure !== null) return;
    const line = JSON.stringify({
      at: new Date((this.options.nowMs ?? Date.now)()).toISOString(),
      cell: this.options.cell,
      member: this.options.member,
      ...record,
    });
    this.queue.push(`${line}\n`);
    this.schedule();
  }

  /** Resolves once every record so far is on disk; rejects if the log has failed. */
  flushed(): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.unwritable());
    if (this.queue.length === 0) {
      // Everything so far is on disk, or in the write under way (which took the queue).
      if (this.writing === null) return Promise.resolve();
      return this.writing.then(() => {
        if (this.failure !== null) throw this.unwritable();
      });
    }
    // Queued lines go with the next write, which takes these waiters along.
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  async close(): Promise<void> {
    await this.writing?.catch(() => undefined);
    await this.handle.close().catch(() => undefined);
  }

  private schedule(): void {
    if (this.writing !== null) return;
    this.writing = this.writeAll().finally(() => {
      this.writing = null;
      if (this.queue.length > 0 && this.failure === null) this.schedule();
    });
  }

  /** One batch: every queued line, one write, one fdatasync, then everyone who waited so far. */
  private async writeAll(): Promise<void> {
    const lines = this.queue;
    const waiters = this.waiters;
    this.queue = [];
    this.waiters = [];
    try {
      const bytes = Buffer.from(lines.join(''));
      if (this.size > 0 && this.size + bytes.length > this.options.maxBytes) await this.rotate();
      await this.handle.write(bytes);
      await this.handle.datasync();
      this.size += bytes.length;
      for (const waiter of waiters) waiter.resolve();
    } catch (error) {
      this.failure = error as Error;
      for (const waiter of [...waiters, ...this.waiters]) waiter.reject(this.unwritable());
      this.waiters = [];
      this.queue = [];
    }
  }

  private async rotate(): Promise<void> {
    await this.handle.close();
    const { path, keep } = this.options;
    for (let i = keep - 1; i >= 1; i--) await rename(`${path}.${i}`, `${path}.${i + 1}`).catch(() => undefined);
    await rename(path, `${path}.1`);
    this.handle = await open(path, 'a');
    this.size = 0;
  }

  private unwritable(): UnavailableError {
    return new UnavailableError(`the audit log cannot be written (${this.failure?.message ?? 'failed'}): audited operations are refused`);
  }
}
