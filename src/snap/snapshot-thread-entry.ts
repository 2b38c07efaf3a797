// The snapshot thread's body (see snapshot-thread.ts): it opens the node's LMDB store a second
// time (lmdb-js shares the environment between threads) and, for each request, streams one read
// view of it into a snapshot file. It never writes to the store.
import { stat } from 'node:fs/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { MvccStore, type MvccSnapshot } from '../mvcc/index.js';
import type { SnapshotMeta } from '../raft/index.js';
import { SnapshotStore } from './index.js';
import { LmdbEngine } from '../storage/index.js';
import { keyringOf, RecordSealer, SealedEngine } from '../keys/index.js';
import { join } from 'node:path';
import type { FromSnapshotThread, SnapshotThreadData, ToSnapshotThread } from './snapshot-thread.js';

// Off the event loop, bigger chunks cost nothing and mean fewer writes (the file cuts them into
// its own checksummed blocks).
const chunkBytes = 1024 * 1024;

const port = parentPort;
if (port === null) throw new Error('snapshot-thread-entry runs as a worker thread');
const data = workerData as SnapshotThreadData;
const engine = LmdbEngine.attach({
  directory: data.dbDirectory, commits: data.commits, ...(data.encryptionKey === undefined ? {} : { encryptionKey: data.encryptionKey }),
});
// A store that seals its records is read through the same sealing layer (read-only: open 0).
const records = data.recordKeys;
const store = new MvccStore(records === undefined ? engine : new SealedEngine(engine, new RecordSealer({
  byNo: new Map(records.keys.map(([no, key]) => [no, Buffer.from(key)])), activeNo: records.activeNo, openNo: 0, kekIds: [],
}, join(data.dbDirectory, 'state.mdb'))));
const files = new SnapshotStore(data.dataDir, {
  logger: { warn: (message) => process.stderr.write(`${message}\n`) },
  keyring: data.keys === undefined ? null : keyringOf(data.keys),
});

let metaArrived: ((meta: SnapshotMeta | null) => void) | null = null;
let running: Promise<void> | null = null;
let closing = false;

const post = (message: FromSnapshotThread): void => port.postMessage(message);

port.on('message', (message: ToSnapshotThread) => {
  switch (message.type) {
    case 'take':
      running = take().catch((error: Error) => {
        if (!closing) post({ type: 'failed', message: error.stack ?? error.message });
      }).finally(() => {
        running = null;
      });
      return;
    case 'meta':
      metaArrived?.(message.meta);
      metaArrived = null;
      return;
    case 'close':
      closing = true;
      metaArrived?.(null);
      metaArrived = null;
      void (running ?? Promise.resolve()).then(async () => {
        await engine.close();
        post({ type: 'closed' });
      });
      return;
  }
});

async function take(): Promise<void> {
  const view = store.snapshot({ chunkBytesMax: chunkBytes });
  try {
    const metaPromise = new Promise<SnapshotMeta | null>((resolve) => {
      metaArrived = resolve;
    });
    post({ type: 'view', index: view.appliedIndex, term: view.appliedTerm });
    const meta = await metaPromise;
    if (meta === null || closing) {
      post({ type: 'done', written: null });
      return;
    }
    const path = await files.save(meta, chunksUnlessClosing(view));
    post({ type: 'done', written: { meta, bytes: (await stat(path)).size } });
  } finally {
    view.close();
  }
}

/** The view's chunks; closing the thread fails the save (no file under a final name). */
async function* chunksUnlessClosing(view: MvccSnapshot): AsyncGenerator<Uint8Array> {
  for (const chunk of view.chunks) {
    if (closing) throw new Error('the snapshot thread is closing');
    yield chunk;
  }
}
