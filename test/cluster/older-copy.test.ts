// A member restarted on an older copy of its data directory (issue 23; docs/design/older-copy.md):
// real processes, real data directories. A follower's directory is copied while it is stopped;
// the cell goes on (more writes it acknowledges, a leader change); the follower is killed, its
// directory replaced by the old copy, and started. Its peers remember what it promised them, so it
// finds out: it says `regressed`, fails /readyz with a CORRUPT alarm, refuses serializable reads
// instead of answering from the past, and votes no more, also when both others restarted in
// between (each keeps what its peers promised it on disk); the two others keep serving every write
// acknowledged before, during and after. A plain kill -9 and restart on its own data is no alarm.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, rmSync } from 'node:fs';
import { findLeader, http, putSurely, sleep, startTestCell, type TestCell } from './harness.js';

async function statusOf(cell: TestCell, name: string): Promise<any> {
  return (await http(`${cell.cell.clientUrl(name)}/v1/cluster/status`, { timeoutMs: 2_000 })).body;
}

async function until<T>(what: string, probe: () => Promise<T | null>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => null);
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

test('a follower restarted on an older copy of its data says so and stays out; a plain restart does not', async () => {
  const cell = await startTestCell();
  try {
    const leader = await findLeader(cell);
    const follower = cell.names.find((name) => name !== leader) as string;
    const other = cell.names.find((name) => name !== leader && name !== follower) as string;
    const written: string[] = [];
    const write = async (key: string, via: string): Promise<void> => {
      await putSurely(`${cell.cell.clientUrl(via)}/v1/kv/oc/${key}`, key);
      written.push(key);
    };
    for (let i = 0; i < 20; i++) await write(`a${i}`, leader);

    // A plain kill -9 and restart on its own data: asks, hears nothing against it, serves again.
    await cell.cell.kill9(follower);
    cell.cell.start(follower);
    await cell.cell.waitReady(30_000, [follower]);
    assert.equal((await statusOf(cell, follower)).data, 'ok');

    // The copy: taken while the follower is stopped, so it is a consistent directory.
    cell.cell.signal(follower, 'SIGTERM');
    await cell.cell.waitExit(follower);
    const copy = `${cell.dataDir}/older-copy`;
    cpSync(cell.cell.dataDirOf(follower), copy, { recursive: true });
    cell.cell.start(follower);
    await cell.cell.waitReady(30_000, [follower]);

    // The cell goes on: writes the follower acknowledges, and a new term.
    for (let i = 0; i < 20; i++) await write(`b${i}`, leader);
    await until('the follower to apply the b writes', async () => {
      const read = await http(`${cell.cell.clientUrl(follower)}/v1/kv/oc/b19?consistency=serializable`, { timeoutMs: 1_000 });
      return read.status === 200 ? true : null;
    });
    const moved = await http(`${cell.cell.clientUrl(leader)}/v1/cluster/leader`, {
      method: 'POST', body: JSON.stringify({ to: (await statusOf(cell, other)).member }),
    });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    const newLeader = await until('the new leader', async () => {
      const name = await findLeader(cell, [other], 5_000);
      return name === other ? name : null;
    });
    for (let i = 0; i < 10; i++) await write(`c${i}`, newLeader);

    // The two others restart too (kill -9): what the follower promised them must outlive that,
    // so each keeps its peer ledger on disk (peer-ledger.json, saved within 500 ms of a change).
    await sleep(1_500);
    await cell.cell.kill9(follower);
    for (const name of [leader, other]) {
      await cell.cell.kill9(name);
      cell.cell.start(name);
    }
    await cell.cell.waitReady(30_000, [leader, other]);

    // Back in time: its directory replaced by the copy, started.
    rmSync(cell.cell.dataDirOf(follower), { recursive: true, force: true });
    cpSync(copy, cell.cell.dataDirOf(follower), { recursive: true });
    cell.cell.start(follower);
    const status = await until('the restored follower to say regressed', async () => {
      const s = await statusOf(cell, follower);
      return s.data === 'regressed' ? s : null;
    });
    assert.match(status.regressedBecause, /term|acknowledged|voted/);

    // It says so where operators look, and answers no read from the past.
    const ready = await until('/readyz to fail with the alarm', async () => {
      const r = await http(`${cell.cell.clientUrl(follower)}/readyz?verbose`, { timeoutMs: 2_000 });
      return r.status === 503 && String(r.body).includes('CORRUPT') ? r : null;
    });
    assert.match(String(ready.body), /\[-\]data_corruption failed: alarm activated: CORRUPT/);
    const stale = await http(`${cell.cell.clientUrl(follower)}/v1/kv/oc/a0?consistency=serializable`);
    assert.equal(stale.status, 503, JSON.stringify(stale.body));
    assert.equal(stale.body.error.code, 'unavailable');
    assert.match(stale.body.error.message, /went back in time/);
    assert.match(cell.cell.tail(follower, 50), /went back in time/, 'logged, naming the data directory');

    // The two others go on, and every acknowledged write is there.
    for (let i = 0; i < 10; i++) await write(`d${i}`, newLeader);
    for (const name of [leader, other]) {
      const read = await http(`${cell.cell.clientUrl(name)}/v1/kv/oc/?prefix=true&keysOnly=true`);
      assert.equal(read.status, 200);
      const keys = new Set((read.body.kvs as { key: string }[]).map((kv) => kv.key));
      assert.deepEqual(written.filter((key) => !keys.has(`/oc/${key}`)), [], `${name} lost acknowledged writes`);
    }
    // It stays out: it never became leader or voted its way back.
    await sleep(1_500);
    const after = await statusOf(cell, follower);
    assert.equal(after.data, 'regressed');
    assert.equal(after.leader, 0, 'it follows no leader (it acknowledges nothing)');
    const leaderNow = await findLeader(cell, [leader, other]);
    assert.ok(leaderNow === leader || leaderNow === other);
  } finally {
    await cell.close();
  }
});
