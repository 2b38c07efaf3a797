// Retiring an old data key on a real member (docs/design/encryption.md "Rotation"): records
// sealed under data key 1; `baton keys rotate --data-key` adds key 2 while the member runs;
// `keys retire` is refused while records still name key 1; after a restart the member seals its
// old records again under key 2 in the background (killed with SIGKILL in the middle, the next
// start resumes after the saved cursor; `keys status` says when key 1 is retired),
// `keys retire` removes key 1 from records.key, and the member restarted with key 2 alone serves
// every current value and an old revision from history; its store holds no value in plaintext.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { http, putSurely, sleep, startTestCell } from './harness.js';
import { baton } from './cli-run.js';

const value = (i: number, round: number): string => `retire-probe-value-${round}-${i}`;

test('data-key rotation: the background rewrite retires the old data key, which then leaves records.key; every record still reads', async () => {
  const keys = mkdtempSync(join(tmpdir(), 'baton-kek-'));
  const keyFile = join(keys, 'kek.hex');
  writeFileSync(keyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  const cell = await startTestCell({ size: 1, extraArgs: ['--encryption-key-file', keyFile] });
  try {
    const url = cell.cell.clientUrl('n1');
    const n1 = join(cell.dataDir, 'n1');
    const records = join(n1, 'db', 'records.key');
    const first = await putSurely(`${url}/v1/kv/rk-0`, value(0, 0));
    const firstRevision = Number(first.revision ?? first.header?.revision);
    assert.ok(firstRevision > 0, JSON.stringify(first));
    for (let i = 1; i < 150; i++) await putSurely(`${url}/v1/kv/rk-${i}`, value(i, 0));
    for (let i = 0; i < 150; i++) await putSurely(`${url}/v1/kv/rk-${i}`, value(i, 1));

    const rotated = await baton(['keys', 'rotate', '--data-dir', n1, '--encryption-key-file', keyFile, '--data-key']);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /added data key 2/);
    const early = await baton(['keys', 'retire', '--data-dir', n1, '--encryption-key-file', keyFile]);
    assert.equal(early.code, 1, 'refused while records still name key 1');
    assert.match(early.stderr, /data key 1 still in use/);

    // The new key is taken at the next start; the rewrite then runs in the background. Slowly
    // here (8 records a transaction, 100 ms apart: ~1,100 entries take ~14 s), so that it can be
    // killed in the middle: kill -9 once its status file shows progress, and the next start resumes.
    cell.cell.signal('n1', 'SIGTERM');
    await cell.cell.waitExit('n1', 20_000);
    process.env['BATON_REWRITE_SLICE_RECORDS'] = '8';
    process.env['BATON_REWRITE_PAUSE_MS'] = '100';
    try {
      cell.cell.start('n1');
      await cell.cell.waitReady(30_000);
    } finally {
      delete process.env['BATON_REWRITE_SLICE_RECORDS'];
      delete process.env['BATON_REWRITE_PAUSE_MS'];
    }
    let progress = '';
    for (let waited = 0; !/being rewritten \(([1-9]\d*) records so far\)/.test(progress); waited += 200) {
      assert.ok(waited < 30_000, `the rewrite makes progress: ${progress}`);
      await sleep(200);
      progress = (await baton(['keys', 'status', '--data-dir', n1, '--encryption-key-file', keyFile])).stdout;
    }
    assert.doesNotMatch(progress, /retired/, 'killed before the end');
    cell.cell.signal('n1', 'SIGKILL');
    await cell.cell.waitExit('n1', 20_000);
    cell.cell.start('n1');
    await cell.cell.waitReady(30_000);
    const resumedAt = /resuming after (\d+) records/.exec(cell.cell.tail('n1', 400));
    assert.ok(resumedAt !== null && Number(resumedAt[1]) > 0, `the restart resumes the pass: ${cell.cell.tail('n1', 20)}`);
    for (let i = 0; i < 20; i++) await putSurely(`${url}/v1/kv/rk-new-${i}`, value(i, 2));
    let status = '';
    for (let waited = 0; !/data key 1 \(old\): retired/.test(status); waited += 250) {
      assert.ok(waited < 30_000, `the rewrite ends: ${status}`);
      await sleep(250);
      status = (await baton(['keys', 'status', '--data-dir', n1, '--encryption-key-file', keyFile])).stdout;
    }
    assert.match(status, /data key 2 \(active\)/);

    const retired = await baton(['keys', 'retire', '--data-dir', n1, '--encryption-key-file', keyFile]);
    assert.equal(retired.code, 0, retired.stderr);
    assert.match(retired.stdout, /removed data key 1/);
    const file = JSON.parse(readFileSync(records, 'utf8')) as { keys: { no: number }[] };
    assert.deepEqual(file.keys.map((k) => k.no), [2], 'records.key holds data key 2 alone');

    // Restarted with key 2 alone: every record opens (current values, history, dedup outcomes).
    cell.cell.signal('n1', 'SIGTERM');
    await cell.cell.waitExit('n1', 20_000);
    cell.cell.start('n1');
    await cell.cell.waitReady(30_000);
    for (let i = 0; i < 150; i++) {
      const answer = await http(`${url}/v1/kv/rk-${i}`);
      assert.equal((answer.body as any).kvs?.[0]?.value, value(i, 1));
    }
    const old = await http(`${url}/v1/kv/rk-0?revision=${firstRevision}`);
    assert.equal((old.body as any).kvs?.[0]?.value, value(0, 0), 'an old revision reads from history');
    const fresh = await http(`${url}/v1/kv/rk-new-19`);
    assert.equal((fresh.body as any).kvs?.[0]?.value, value(19, 2));
    await cell.cell.stopAll();
    assert.equal(readFileSync(join(n1, 'db', 'state.mdb')).includes(Buffer.from('retire-probe-value')), false, 'no value in plaintext');
  } finally {
    await cell.close();
    rmSync(keys, { recursive: true, force: true });
  }
});
