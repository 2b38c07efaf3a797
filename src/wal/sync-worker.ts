// The WAL's sync thread: it runs each batch of ops (writeSync + fdatasyncSync) and answers, so
// the event loop never waits on the disk. Requests arrive through shared memory
// (shared-channel.ts); between them the thread sleeps in Atomics.wait. One batch at a time.
import { workerData } from 'node:worker_threads';
import { assert } from '../base/assert.js';
import { executeOps, realFileIo } from './io-ops.js';
import type { OpenSegments } from './io-ops.js';
import { Slot, decodeRequest, encodeError, type SharedChannel } from './shared-channel.js';

const channel = workerData as SharedChannel | null;
assert(channel !== null && channel !== undefined, 'sync-worker runs as a worker thread with its channel');
const { control, data, errors } = channel;
const open: OpenSegments = new Map();

let seen = 0;
for (;;) {
  Atomics.wait(control, Slot.request, seen);
  const id = Atomics.load(control, Slot.request);
  if (id === seen) continue;
  seen = id;
  let ops;
  try {
    ops = decodeRequest(data);
    if (ops === null) break;
    executeOps(ops, open, realFileIo);
    Atomics.store(control, Slot.status, 0);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? null;
    Atomics.store(control, Slot.errorBytes, encodeError(errors, String((error as Error).message), code));
    Atomics.store(control, Slot.status, 1);
  }
  Atomics.store(control, Slot.done, id);
  Atomics.notify(control, Slot.done);
}
Atomics.store(control, Slot.done, seen);
Atomics.notify(control, Slot.done);
