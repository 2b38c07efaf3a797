// The fencing guard, in memory and on LMDB, tells the design brief's story: A gets token 41, is
// paused, B gets 42 and writes, A resumes and writes with 41: rejected. The holder of the current
// token may write again; the LMDB guard remembers the highest token across a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbFencingGuard, MemoryFencingGuard, type FencingGuard } from '../../../src/fencing/index.js';
import { InvalidArgumentError } from '../../../src/base/errors.js';

function story(guard: FencingGuard): void {
  assert.deepEqual(guard.check('/reports/42', 41), { accepted: true, token: 41 });
  assert.deepEqual(guard.check('/reports/42', 42), { accepted: true, token: 42 });
  assert.deepEqual(guard.check('/reports/42', 42), { accepted: true, token: 42 }, 'the holder writes again');
  assert.deepEqual(guard.check('/reports/42', 41), { accepted: false, token: 41, highest: 42 });
  assert.deepEqual(guard.check('/reports/7', 41), { accepted: true, token: 41 }, 'resources are separate');
  assert.equal(guard.highest('/reports/42'), 42);
  assert.equal(guard.highest('/nothing'), 0);
  // What the resource exports as its own metrics (issue #29): the stale owner's write is counted.
  assert.deepEqual({ ...guard.counts }, { accepted: 4, rejected: 1 });
  assert.throws(() => guard.check('/reports/42', 0), InvalidArgumentError);
  assert.throws(() => guard.check('/reports/42', 1.5), InvalidArgumentError);
  assert.deepEqual({ ...guard.counts }, { accepted: 4, rejected: 1 }, 'bad input is no check');
}

test('the in-memory guard rejects a stale owner', () => {
  story(new MemoryFencingGuard());
});

test('the LMDB guard rejects a stale owner, also after a restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-fencing-'));
  try {
    const guard = LmdbFencingGuard.open(dir);
    story(guard);
    await guard.close();
    const reopened = LmdbFencingGuard.open(dir);
    assert.equal(reopened.highest('/reports/42'), 42);
    assert.equal(reopened.check('/reports/42', 41).accepted, false);
    assert.deepEqual({ ...reopened.counts }, { accepted: 0, rejected: 1 }, 'counted since this guard opened');
    await reopened.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
