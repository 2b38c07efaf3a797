// LMDB's page cipher takes its nonce from the page number and the transaction id that wrote the
// page (mdb_page_encrypt). A store's data key lives as long as the store, so a (page, txnid)
// pair must never be written twice with different content. Within one process LMDB's txnids
// only grow. A crash can make them repeat: after an OS crash open() goes back to the
// checkpoint's tree (restoreCheckpoint), and after a process crash a commit whose data pages were
// written but whose meta page was not is forgotten; either way the next transactions reuse ids
// whose pages may already be on disk, encrypted with the same keystream.
//
// So before LMDB opens an encrypted store, its transaction id moves forward by 2^32: both meta
// slots get the latest tree's meta page with txnid + 2^32 (nothing else changes; the tree's
// pages carry their own older ids, which LMDB only compares as older). Every id used before
// the open is below the latest durable id + 2^32 as long as fewer than 4 billion commits fall
// between two opens of the meta page reaching the disk, which a checkpoint every 100 ms or
// 50,000 entries bounds by orders of magnitude. 2^64 / 2^32 leaves 4 billion opens.
import { closeSync, constants, existsSync, openSync, rmSync } from 'node:fs';
import { latestMeta, restoreMetaPages, withTxnId, type MetaPage } from './lmdb-meta.js';

export const txnIdAdvance = 1n << 32n;

/** Moves the store's transaction ids past any its earlier processes may have used; returns the new latest meta. */
export function advanceTxnIds(path: string): MetaPage | null {
  if (!existsSync(path)) return null;
  const fd = openSync(path, constants.O_RDONLY);
  let meta: MetaPage;
  try {
    meta = latestMeta(fd, path);
  } finally {
    closeSync(fd);
  }
  const advanced = withTxnId(meta, meta.txnId + txnIdAdvance);
  restoreMetaPages(path, advanced);
  // The lock file's reader table holds the old ids; nobody has the store open (open() runs first).
  rmSync(`${path}-lock`, { force: true });
  return advanced;
}
