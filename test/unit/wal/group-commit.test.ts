// Group commit and failure, with a scripted executor in front of the real one: every save made
// while a write+fdatasync is in flight joins the next batch (one fdatasync for all of them), and
// after an I/O failure the WAL refuses all further work instead of retrying an fdatasync.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InlineExecutor, Wal } from '../../../src/wal/index.js';
import type { WalExecutor, WalOp } from '../../../src/wal/index.js';
import { makeEntry, withTempDir } from './helpers.js';

/** Records each batch; holds batches while `gate` is set; fails them while `failWith` is set. */
class ScriptedExecutor implements WalExecutor {
  readonly batches: (readonly WalOp[])[] = [];
  gate: Promise<void> | null = null;
  failWith: Error | null = null;
  private readonly inner = new InlineExecutor();

  async run(ops: readonly WalOp[]): Promise<void> {
    this.batches.push(ops);
    if (this.gate !== null) await this.gate;
    if (this.failWith !== null) throw this.failWith;
    await this.inner.run(ops);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

const syncsIn = (ops: readonly WalOp[]): number => ops.filter((op) => op.type === 'sync').length;

test('saves made while a sync is in flight all join the next one', async () => {
  await withTempDir(async (dir) => {
    const executor = new ScriptedExecutor();
    const { wal } = await Wal.open(dir, { executor });
    const opened = executor.batches.length;
    let release = (): void => {};
    executor.gate = new Promise((resolve) => (release = resolve));
    const first = wal.save([makeEntry(1, 1)], null);
    await new Promise((resolve) => setImmediate(resolve)); // the first batch is now in flight
    assert.equal(executor.batches.length, opened + 1);
    const later = Array.from({ length: 50 }, (_, k) => wal.save([makeEntry(k + 2, 1)], null));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(executor.batches.length, opened + 1, 'nothing else starts while one is in flight');
    executor.gate = null;
    release();
    await first;
    await Promise.all(later);
    assert.equal(executor.batches.length, opened + 2, 'the 50 later saves took one batch');
    const second = executor.batches[opened + 1] ?? [];
    assert.equal(syncsIn(second), 1, 'and one fdatasync');
    assert.equal(wal.stats().syncs, 2);
    await wal.close();
  });
});

test('after an I/O failure every save is refused, and close still works', async () => {
  await withTempDir(async (dir) => {
    const executor = new ScriptedExecutor();
    const { wal } = await Wal.open(dir, { executor });
    await wal.save([makeEntry(1, 1)], null);
    executor.failWith = Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
    const failing = [wal.save([makeEntry(2, 1)], null), wal.save([makeEntry(3, 1)], null)];
    for (const save of failing) await assert.rejects(save, /EIO/);
    executor.failWith = null; // even if the disk recovers, the WAL must not carry on
    await assert.rejects(wal.save([makeEntry(4, 1)], null), /EIO/);
    await assert.rejects(wal.releaseBefore(0), /EIO/);
    await wal.close();
    const again = await Wal.open(dir, { executor: 'inline' });
    assert.deepEqual(again.recovered.entries.map((entry) => entry.index), [1]);
    await again.wal.close();
  });
});
