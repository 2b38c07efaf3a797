// The scale bench's restore step (issue 27): the backup taken in step 4 restored into a NEW
// 3-member cell by the system's own tool (Baton: `baton snapshot restore` once per member, a new
// cluster and fencing epoch; etcd 3.4: `etcdctl snapshot restore` once per member), then every
// member started: the restore's wall time, the time from starting the processes until every
// member is ready and serves a linearizable get of a held key, and the revision the new cell
// starts at. The new cell is stopped and its data removed at the end.
import { ProcessCell } from '../node/testing/process-cell.js';
import { BatonScaleCell } from './baton-scale-cell.js';
import { freePorts } from './ports.js';
import { run as runCommand, type ScaleCell } from './scale-cell.js';
import { scaleValue } from './scale-keys.js';

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

/**
 * A new 3-member Baton cell in `dir` made from a backup by `baton snapshot restore`, one call per
 * member (as an operator restores a cell of separate machines); `lastKey` is a key the backup
 * holds with the scale value (verify reads it back, linearizably).
 */
export async function batonRestorable(
  dir: string,
  cliPath: string,
  lastKey: string,
  readyTimeoutMs: number,
  /** The three calls at once, as three machines restore their members (default: one after another). */
  concurrent = false,
): Promise<RestorableCell> {
  const ports = await freePorts(6);
  const members = [0, 1, 2].map((i) => ({ name: `n${i + 1}`, clientPort: ports[i] as number, peerPort: ports[i + 3] as number }));
  const processes = new ProcessCell({ dataDir: dir, output: 'pipe', members });
  const cell = new BatonScaleCell(processes, cliPath, 3, readyTimeoutMs);
  const initialCluster = members.map((m) => `${m.name}=${processes.peerUrl(m.name)}`).join(',');
  return {
    cell,
    tool: `baton snapshot restore (per member, ${concurrent ? 'the three at once' : 'one after another'})`,
    async restore(file) {
      const nonce = `scale-${process.pid}`;
      const restoreOne = (name: string): Promise<string> => runCommand(process.execPath, [cliPath, 'snapshot', 'restore', file, '--name', name,
        '--data-dir', processes.dataDirOf(name), '--initial-cluster', initialCluster, '--restore-nonce', nonce], { timeoutMs: readyTimeoutMs });
      if (concurrent) await Promise.all(members.map((m) => restoreOne(m.name)));
      else for (const m of members) await restoreOne(m.name);
    },
    startAll: () => processes.startAll(),
    async verify() {
      const answer = await fetch(`${processes.clientUrl('n1')}/v1/kv${lastKey}?consistency=linearizable`);
      const body = await answer.json() as { kvs?: { value: string }[] };
      return answer.status === 200 && body.kvs?.[0]?.value === scaleValue.toString('latin1') ? null : `GET ${lastKey}: ${answer.status}`;
    },
  };
}
