// GET /v1/maintenance/hashkv?revision=R: this node's content hash of the key space at R
// (src/mvcc/kv-hash.ts), {hash, revision, compactRevision}.
// GET /v1/maintenance/snapshot: this node's whole state machine (every key, retained history,
// leases, the dedup table) as one consistent view, streamed in the MVCC snapshot format
// (src/mvcc/snapshot-stream.ts: its trailer holds an entry count and checksum). The view is the
// node's applied state when the request arrives (like a serializable read). Headers name the
// applied index, term and revision; the trailer `Baton-Snapshot-Sha256` is the SHA-256 of every
// byte sent, so `baton snapshot save` can verify the file it wrote. Writes follow the socket's
// pace (the read view stays open meanwhile), and only a few downloads run at once per node.
// `Baton-Snapshot-Estimate-Bytes` (when the store can tell) is the store's bytes in use: the
// stream is about that size or smaller, enough for `snapshot save`'s progress bar.
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { OverloadedError } from '../../base/errors.js';
import type { MvccStore } from '../../mvcc/index.js';
import { hashKvPaced } from '../hash-kv.js';
import type { RouteGroup } from './handler.js';
import type { EdgeAudit } from '../types.js';
import { sendJson } from './respond.js';
import { currentSource } from '../request-source.js';

export const snapshotPath = '/v1/maintenance/snapshot';
export const hashKvPath = '/v1/maintenance/hashkv';
export const snapshotChecksumTrailer = 'baton-snapshot-sha256';
/** Each download holds an LMDB read view open (old pages cannot be reused meanwhile). */
const concurrentSnapshotsMax = 2;
const chunkBytes = 256 * 1024;

/** Both are administration: `admin` throws permission_denied unless the caller administers the cell. */
export function createMaintenanceRoutes(
  store: MvccStore,
  admin: { checkAdmin(principal: string): void },
  audit: EdgeAudit | null = null,
  storeBytesInUse: (() => number) | null = null,
): RouteGroup {
  let running = 0;
  return async (request) => {
    if ((request.url.pathname === hashKvPath || request.url.pathname === snapshotPath) && request.method === 'GET') {
      admin.checkAdmin(request.principal);
    }
    if (request.url.pathname === hashKvPath && request.method === 'GET') {
      // This member's HashKV at `revision` (0: now), as it has applied it: members compare them
      // (node/corruption-check.ts). A revision it has not reached yet: 400 future revision.
      const revision = request.query.integer('revision', 0) ?? 0;
      request.query.rejectUnknown();
      const hashed = await hashKvPaced(store, revision);
      sendJson(request.res, request.context, 200, hashed);
      return true;
    }
    if (request.url.pathname !== snapshotPath || request.method !== 'GET') return false;
    request.query.rejectUnknown();
    if (running >= concurrentSnapshotsMax) {
      throw new OverloadedError(`${running} snapshot downloads already running on this node`);
    }
    running++;
    try {
      // Audited (a copy of every key leaves the cell): the record is durable before the first byte.
      if (audit !== null) {
        audit.record({ event: 'snapshot-save', principal: request.principal, address: currentSource() ?? null, result: 'ok', revision: store.revision, detail: { via: 'http' } });
        await audit.flushed();
      }
      await streamSnapshot(store, request.res, request.context.cellId, storeBytesInUse?.() ?? null);
    } finally {
      running--;
    }
    return true;
  };
}

async function streamSnapshot(store: MvccStore, res: ServerResponse, cellId: string, estimateBytes: number | null): Promise<void> {
  // snapshot() opens the read view synchronously, so the revision read next belongs to it.
  const snapshot = store.snapshot({ chunkBytesMax: chunkBytes });
  const revision = store.revision;
  const chunks = snapshot.chunks[Symbol.iterator]();
  const hash = createHash('sha256');
  res.writeHead(200, {
    'content-type': 'application/octet-stream',
    'cache-control': 'no-store',
    trailer: snapshotChecksumTrailer,
    'baton-cell': cellId,
    'baton-revision': String(revision),
    'baton-snapshot-index': String(snapshot.appliedIndex),
    'baton-snapshot-term': String(snapshot.appliedTerm),
    ...(estimateBytes === null ? {} : { 'baton-snapshot-estimate-bytes': String(estimateBytes) }),
  });
  let closed = false;
  res.once('close', () => {
    closed = true;
  });
  try {
    for (let next = chunks.next(); next.done !== true; next = chunks.next()) {
      if (closed) return;
      hash.update(next.value);
      if (!res.write(next.value)) await drained(res);
    }
    res.addTrailers({ [snapshotChecksumTrailer]: hash.digest('hex') });
    res.end();
  } catch (error) {
    // Headers are sent: the only honest signal left is a broken stream (no checksum trailer).
    res.destroy(error instanceof Error ? error : new Error(String(error)));
  } finally {
    chunks.return?.(); // closes the read view if the download stopped early
  }
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}
