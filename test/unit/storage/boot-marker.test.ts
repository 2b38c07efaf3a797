// Deferred commits and the OS-crash rule: a data file written with deferred commits is trusted
// after a process crash in the same boot; after the OS restarted before a final sync (its
// unsynced pages may be gone) open goes back to the last checkpoint (power-loss.test.ts), or,
// with none, deletes the file so the node rebuilds from its durable snapshot and WAL. A clean
// close syncs and clears the marker, so a later reboot keeps the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { CorruptFileError } from '../../../src/base/errors.js';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MvccStore } from '../../../src/mvcc/index.js';
import { LmdbEngine } from '../../../src/storage/index.js';
import { generateWorkload, testLimits } from '../mvcc/workload.js';
import { withTempDir } from './temp-dir.js';

const markerPath = (dir: string): string => join(dir, 'open-since-boot');

/** Applies entries with deferred commits in a child process, then SIGKILLs it (never closed). */
function applyThenKill(dir: string, bootId: string): Promise<void> {
  const script = fileURLToPath(new URL('./crash-child.js', import.meta.url));
  const child = spawn(process.execPath, [script, dir, '7', '400', 'deferred', bootId, 'hold'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('applied')) child.kill('SIGKILL');
    });
    child.on('error', reject);
    child.on('exit', () => resolve());
  });
}

test('deferred commits: a process crash keeps the file; an OS restart before a sync discards it', async () => {
  await withTempDir(async (dir) => {
    await applyThenKill(dir, 'boot-1');
    assert.equal(readFileSync(markerPath(dir), 'utf8').trim(), 'boot-1', 'the marker outlives the crash');
    // Same boot: the page cache still holds every commit.
    let engine = LmdbEngine.open({ directory: dir, commits: 'deferred', bootId: 'boot-1' });
    const applied = new MvccStore(engine, testLimits).appliedIndex;
    assert.ok(applied > 0, 'the killed child applied something');
    assert.equal(engine.discardedAfterReboot, false);
    await engine.close();
    assert.equal(existsSync(markerPath(dir)), false, 'a clean close syncs and clears the marker');
    // After a clean close, a reboot changes nothing.
    engine = LmdbEngine.open({ directory: dir, commits: 'deferred', bootId: 'boot-2' });
    assert.equal(new MvccStore(engine, testLimits).appliedIndex, applied);
    assert.equal(engine.discardedAfterReboot, false);
    await engine.close();

    await applyThenKill(dir, 'boot-2');
    // The OS restarts: the file goes back to its last checkpoint (the killed child checkpointed
    // when it opened), and a file that does not hold that tree intact is refused, naming it.
    const intact = readFileSync(join(dir, 'state.mdb'));
    writeFileSync(join(dir, 'state.mdb'), Buffer.alloc(intact.length, 0x5a));
    assert.throws(() => LmdbEngine.open({ directory: dir, commits: 'deferred', bootId: 'boot-3', logger: { warn: () => {} } }),
      (error: Error) => error instanceof CorruptFileError && error.message.includes(join(dir, 'state.mdb')));
    writeFileSync(join(dir, 'state.mdb'), intact);
    engine = LmdbEngine.open({ directory: dir, commits: 'deferred', bootId: 'boot-3', logger: { warn: () => {} } });
    assert.equal(engine.afterReboot, 'restored');
    assert.ok(new MvccStore(engine, testLimits).appliedIndex >= 0);
    await engine.close();

    // A file with unsynced commits and no checkpoint (written by a version before checkpoints):
    // not trusted after an OS restart; open deletes it and the node rebuilds.
    await applyThenKill(dir, 'boot-4');
    rmSync(join(dir, 'checkpoint'));
    writeFileSync(join(dir, 'state.mdb'), Buffer.alloc(64 * 1024, 0x5a));
    const warnings: string[] = [];
    engine = LmdbEngine.open({
      directory: dir, commits: 'deferred', bootId: 'boot-5', logger: { warn: (m) => warnings.push(m) },
    });
    try {
      assert.equal(engine.discardedAfterReboot, true);
      assert.match(warnings.join('\n'), /OS restarted/);
      assert.equal(readFileSync(markerPath(dir), 'utf8').trim(), 'boot-5');
      const store = new MvccStore(engine, testLimits);
      assert.equal(store.appliedIndex, 0, 'an empty store: the node restores its snapshot and replays its log');
      const entries = generateWorkload(3n, 50).map((item) => item.entry);
      store.applyBatch(entries);
      assert.equal(store.appliedIndex, 50);
    } finally {
      await engine.close();
    }
  });
});

test('a synced open after a crashed deferred one syncs the file, then clears the marker', async () => {
  await withTempDir(async (dir) => {
    await applyThenKill(dir, 'boot-1');
    const engine = LmdbEngine.open({ directory: dir, commits: 'synced', bootId: 'boot-1' });
    assert.equal(engine.commits, 'synced');
    assert.ok(new MvccStore(engine, testLimits).appliedIndex > 0);
    assert.equal(existsSync(markerPath(dir)), false, 'a synced file needs no marker');
    await engine.close();
  });
});

test('without a boot id from the OS, commits stay synced and no marker is written', async () => {
  await withTempDir(async (dir) => {
    const engine = LmdbEngine.open({ directory: dir, commits: 'deferred', bootId: null });
    try {
      assert.equal(engine.commits, 'synced');
      assert.equal(existsSync(markerPath(dir)), false);
    } finally {
      await engine.close();
    }
  });
});
