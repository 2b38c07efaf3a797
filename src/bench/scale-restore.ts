// The scale bench's restore step (issue 27): the backup taken in step 4 restored into a NEW
// 3-member cell by the system's own tool (Baton: `baton snapshot restore` once per member, a new
// cluster and fencing epoch; etcd 3.4: `etcdctl snapshot restore` once per member), then every
// member started: the restore's wall time, the time from starting the processes until every
// member is ready and serves a linearizable get of a held key, and the revision the new cell
// starts at. The new cell is stopped and its data removed at the end.
import type { ScaleCell } from './scale-cell.js';

export interface RestoreFigures {
  readonly tool: string;
  /** Restoring every member's data directory (the tool, one call per member, in turn). */
  readonly restoreSeconds: number;
  /** From starting the members until each is ready and serves a linearizable get. */
  readonly readySeconds: number;
  readonly totalSeconds: number;
  /** The new cell's revision once ready (Baton: in the next fencing epoch). */
  readonly revision: number;
}

/** A cell made from a backup, not started yet. */
export interface RestorableCell {
  readonly cell: ScaleCell;
  readonly tool: string;
  /** Writes each member's data directory from `file`. */
  restore(file: string): Promise<void>;
  startAll(): void;
  /** Null when the restored cell serves the loaded data (a held key's value); else what is wrong. */
  verify(): Promise<string | null>;
}

export async function restoreInto(restorable: RestorableCell, file: string, readyTimeoutMs: number): Promise<RestoreFigures> {
  const began = performance.now();
  await restorable.restore(file);
  const restored = performance.now();
  restorable.startAll();
  const { cell } = restorable;
  for (const name of cell.names()) {
    const deadline = performance.now() + readyTimeoutMs;
    for (;;) {
      const state = await cell.probe(name).catch((error: Error) => error.message);
      if (state === 'ready') break;
      if (performance.now() > deadline) throw new Error(`restored ${name} not ready within ${readyTimeoutMs} ms: ${state}\n${cell.tail(name)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const ready = performance.now();
  const wrong = await restorable.verify();
  if (wrong !== null) throw new Error(`the restored cell: ${wrong}`);
  return {
    tool: restorable.tool,
    restoreSeconds: (restored - began) / 1000,
    readySeconds: (ready - restored) / 1000,
    totalSeconds: (ready - began) / 1000,
    revision: await cell.revision(),
  };
}
