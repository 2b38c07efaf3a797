// Fault injection for the fault suite (test/faults): a node started with BATON_FAULT_INJECTION=1
// and BATON_FAULT_CONTROL=<file> follows that JSON file, which the test rewrites at run time:
// - `clockOffsetMs`: added to this process's wall clock (Date.now), like an NTP step. Baton
//   reads the wall clock only for the proposal time carried in each entry (the dedup window's
//   clock) and for display times; leases and timeouts run on the monotonic clock, which a wall
//   clock step does not move, so this fault tests exactly the wall-clock uses.
// - `fsyncDelayMs`: a slow disk, applied in src/wal/io-ops.ts to every WAL fdatasync.
// Both variables are needed, so neither alone can slow or skew a production node; when active,
// the node says so loudly at start and on every change.
import { copyFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { faultControlPath, readFaultControl, type FaultControl } from '../../wal/io-ops.js';

export interface FaultHookLogger {
  warn(message: string): void;
}

const pollMs = 100;

/** Installs the hooks if fault injection is on; returns a function that removes them. */
export function installFaultHooks(env: NodeJS.ProcessEnv, log: FaultHookLogger): () => void {
  const path = faultControlPath(env);
  if (path === null) {
    if (env['BATON_FAULT_CONTROL'] !== undefined) {
      log.warn('BATON_FAULT_CONTROL is set without BATON_FAULT_INJECTION=1: fault injection stays OFF');
    }
    return () => {};
  }
  log.warn(`FAULT INJECTION ACTIVE (test only): wall clock offset and WAL fsync delay follow ${path}`);
  const realNow = Date.now.bind(Date);
  let current: FaultControl = { fsyncDelayMs: 0, clockOffsetMs: 0 };
  const apply = (): void => {
    const next = readFaultControl(path);
    if (next.clockOffsetMs !== current.clockOffsetMs || next.fsyncDelayMs !== current.fsyncDelayMs) {
      log.warn(`FAULT INJECTION: wall clock offset ${next.clockOffsetMs} ms, WAL fsync delay ${next.fsyncDelayMs} ms`);
    }
    current = next;
  };
  apply();
  Date.now = () => realNow() + current.clockOffsetMs;
  const timer = setInterval(apply, pollMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    Date.now = realNow;
  };
}

/**
 * With fault injection on and BATON_FAULT_SYNCED_COPY=1: after each checkpoint of the store (a
 * synchronous call, before any later commit), copies what is certainly on disk, the store file
 * and its checkpoint record, to state.mdb.synced and checkpoint.synced. A power-loss test builds
 * its disk image from those and the file as the crash left it (test/unit/storage/node-power-loss.test.ts).
 */
export function syncedCopyHook(env: NodeJS.ProcessEnv, log: FaultHookLogger): ((dbDirectory: string) => () => void) | undefined {
  if (faultControlPath(env) === null || env['BATON_FAULT_SYNCED_COPY'] !== '1') return undefined;
  log.warn('FAULT INJECTION ACTIVE (test only): the store file is copied after every checkpoint');
  return (dbDirectory) => () => {
    for (const name of ['state.mdb', 'checkpoint']) {
      copyFileSync(join(dbDirectory, name), join(dbDirectory, `${name}.synced.tmp`));
    }
    for (const name of ['state.mdb', 'checkpoint']) {
      renameSync(join(dbDirectory, `${name}.synced.tmp`), join(dbDirectory, `${name}.synced`));
    }
  };
}
