// Scheduled backups inside the cell (--backup-dir DIR --backup-every 1h --backup-keep 24): at each
// interval the member that leads writes one snapshot file of its applied store (the same stream
// `baton snapshot save` downloads, so `baton snapshot restore` reads it), then a metadata file
// beside it, and keeps the newest N. One backup per interval for the cell, not one per member:
// followers skip their turn. A file appears only whole (written as .partial, fsynced, renamed);
// a failure leaves the older backups and shows in baton_backup_last_failed / _failures_total.
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import type { Timers } from '../base/timers.js';
import { Gauge, type Registry } from '../metrics/registry.js';
import type { MvccStore } from '../mvcc/index.js';
import { ensureDir, syncDir, writeAll } from '../snap/file-io.js';
import { SealedFileWriter, type Keyring } from '../keys/index.js';

export interface BackupSchedule {
  readonly dir: string;
  readonly everyMs: number;
  readonly keep: number;
}

export interface BackupMeta {
  readonly file: string;
  readonly sha256: string;
  readonly bytes: number;
  readonly clusterId: string;
  readonly cell: string;
  readonly member: number;
  readonly revision: number;
  readonly epoch: number;
  readonly appliedIndex: number;
  readonly appliedTerm: number;
  readonly time: string;
  /** With encryption at rest on, the key-encryption key that wraps the file's data key; else null. */
  readonly kekId: string | null;
}

const filePattern = /^backup-\d{8}T\d{6}\.\d{3}Z-r\d+\.snap$/;

export class BackupTask {
  private timer: { cancel(): void } | null = null;
  private stopped = false;
  private running: Promise<unknown> | null = null;
  private successes = 0;
  private failures = 0;
  private lastFailed = 0;
  private lastSuccessMs = 0;
  private lastBytes = 0;

  constructor(
    private readonly schedule: BackupSchedule,
    private readonly parts: {
      readonly store: MvccStore;
      readonly isLeader: () => boolean;
      readonly identity: { readonly clusterId: string; readonly cell: string; readonly member: number };
      readonly timers: Timers;
      readonly nowMs: () => number;
      readonly log: { info(message: string): void; warn(message: string): void };
      /** Encryption at rest: each backup is a sealed file under its own data key (null: plaintext). */
      readonly keyring?: Keyring | null;
    },
  ) {}

  registerMetrics(registry: Registry): void {
    registry.add(new Gauge('baton_backup_success_total', 'Scheduled backups written by this member', () => this.successes, 'counter'));
    registry.add(new Gauge('baton_backup_failures_total', 'Scheduled backups this member failed to write', () => this.failures, 'counter'));
    registry.add(new Gauge('baton_backup_last_failed', '1 when this member\'s last scheduled backup failed (alert on it)', () => this.lastFailed));
    registry.add(new Gauge('baton_backup_last_success_timestamp_seconds', 'When this member last wrote a backup (Unix time; 0: never)', () => this.lastSuccessMs / 1000));
    registry.add(new Gauge('baton_backup_last_bytes', 'Size of this member\'s last backup file', () => this.lastBytes));
  }

  start(): void {
    this.arm();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    await this.running;
  }

  private arm(): void {
    if (this.stopped) return;
    this.timer = this.parts.timers.setTimeout(() => {
      if (this.parts.isLeader()) {
        this.running = this.runOnce().finally(() => {
          this.running = null;
          this.arm();
        });
      } else {
        this.arm();
      }
    }, this.schedule.everyMs);
  }

  /** Writes one backup now and prunes to `keep`; records success or failure in the metrics. */
  async runOnce(): Promise<BackupMeta | null> {
    try {
      const meta = await this.write();
      await this.prune();
      this.successes++;
      this.lastFailed = 0;
      this.lastSuccessMs = this.parts.nowMs();
      this.lastBytes = meta.bytes;
      this.parts.log.info(`backup ${meta.file}: ${meta.bytes} bytes, revision ${meta.revision}, sha256 ${meta.sha256}`);
      return meta;
    } catch (error) {
      this.failures++;
      this.lastFailed = 1;
      this.parts.log.warn(`backup into ${this.schedule.dir} failed: ${(error as Error).message}`);
      return null;
    }
  }

  private async write(): Promise<BackupMeta> {
    const { store, identity } = this.parts;
    await ensureDir(this.schedule.dir);
    // snapshot() opens its read view now: revision and epoch read next belong to it.
    const snapshot = store.snapshot();
    const revision = store.revision;
    const epoch = store.epoch;
    const time = new Date(this.parts.nowMs()).toISOString();
    const name = `backup-${time.replaceAll('-', '').replaceAll(':', '')}-r${revision}.snap`;
    const path = join(this.schedule.dir, name);
    const partial = `${path}.partial`;
    const hash = createHash('sha256');
    let bytes = 0;
    const handle = await fsp.open(partial, 'w', 0o600);
    const keyring = this.parts.keyring ?? null;
    const sealer = keyring === null ? null : new SealedFileWriter(keyring, 'baton-snapshot');
    const write = async (pieces: readonly Uint8Array[]): Promise<void> => {
      for (const piece of pieces) {
        hash.update(piece);
        await writeAll(handle, piece, bytes);
        bytes += piece.length;
      }
    };
    try {
      for (const chunk of snapshot.chunks) await write(sealer === null ? [chunk] : sealer.push(chunk));
      if (sealer !== null) await write(sealer.end());
      await handle.sync();
    } catch (error) {
      snapshot.close();
      await handle.close();
      await fsp.rm(partial, { force: true });
      throw error;
    }
    await handle.close();
    await fsp.rename(partial, path);
    const meta: BackupMeta = {
      file: name, sha256: hash.digest('hex'), bytes, clusterId: identity.clusterId, cell: identity.cell, member: identity.member,
      revision, epoch, appliedIndex: snapshot.appliedIndex, appliedTerm: snapshot.appliedTerm, time, kekId: sealer?.kekId ?? null,
    };
    await fsp.writeFile(`${path}.json.partial`, `${JSON.stringify(meta, null, 2)}\n`);
    await fsp.rename(`${path}.json.partial`, `${path}.json`);
    await syncDir(this.schedule.dir);
    return meta;
  }

  /** Keeps the newest `keep` backups (names sort by time) and their metadata. */
  private async prune(): Promise<void> {
    const names = (await fsp.readdir(this.schedule.dir)).filter((name) => filePattern.test(name)).sort();
    for (const name of names.slice(0, Math.max(0, names.length - this.schedule.keep))) {
      await fsp.rm(join(this.schedule.dir, `${name}.json`), { force: true });
      await fsp.rm(join(this.schedule.dir, name), { force: true });
    }
  }
}
