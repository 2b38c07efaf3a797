// The per-member fault control files of a run (see src/node/testing/fault-hooks.ts): each member starts
// with `node --env-file <member>.env`, which turns fault injection on and names its own JSON
// control file; set() rewrites that file and the member picks it up within pollMs.
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FaultControl } from '../../src/wal/io-ops.js';

export class FaultControls {
  /** How often a member rereads its file (fault-hooks.ts and io-ops.ts poll at 100 ms). */
  readonly pollMs = 100;
  private readonly dir = mkdtempSync(join(tmpdir(), 'baton-faults-'));
  private readonly current = new Map<string, FaultControl>();

  constructor(names: readonly string[]) {
    for (const name of names) this.add(name);
  }

  /** Flags for `node` itself, before the script (ProcessCell's nodeArgs). */
  nodeArgs(name: string): string[] {
    // A node added during the run (grow-first) gets its files when it first starts.
    if (!this.current.has(name)) this.add(name);
    return [`--env-file=${join(this.dir, `${name}.env`)}`];
  }

  set(name: string, change: Partial<FaultControl>): void {
    const next = { fsyncDelayMs: 0, clockOffsetMs: 0, ...this.current.get(name), ...change };
    this.current.set(name, next);
    // Write then rename: a member polling mid-write must never read half a file as "no faults".
    const temp = `${this.file(name)}.tmp`;
    writeFileSync(temp, JSON.stringify(next));
    renameSync(temp, this.file(name));
  }

  private add(name: string): void {
    writeFileSync(join(this.dir, `${name}.env`), `BATON_FAULT_INJECTION=1\nBATON_FAULT_CONTROL=${this.file(name)}\n`);
    this.set(name, { fsyncDelayMs: 0, clockOffsetMs: 0 });
  }

  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  private file(name: string): string {
    return join(this.dir, `${name}.json`);
  }
}
