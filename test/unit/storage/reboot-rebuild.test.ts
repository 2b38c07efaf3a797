// A real node after a (simulated) OS crash: its state machine uses deferred LMDB commits, so the
// data file left by a kill -9 in another boot is not trusted. Here the marker names another boot
// and the file is garbage: the node must delete it, rebuild from its snapshot file and WAL (a
// single member: nobody else can hand it the data) and serve every acknowledged write at the
// same revision.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { http, putSurely, startTestCell } from '../../cluster/harness.js';

test('after an OS restart a node rebuilds its LMDB file from snapshot + WAL, losing no acknowledged write', async () => {
  const cell = await startTestCell({ size: 1, extraArgs: ['--snapshot-entries', '10'] });
  try {
    const url = cell.cell.clientUrl('n1');
    let revision = 0;
    for (let i = 0; i < 45; i++) revision = (await putSurely(`${url}/v1/kv/r/${i}`, `v${i}`)).revision;
    assert.ok(revision >= 45, `writes acknowledged up to revision ${revision}`);
    cell.cell.signal('n1', 'SIGKILL');
    await cell.cell.waitExit('n1');
    const db = join(cell.dataDir, 'n1', 'db');
    writeFileSync(join(db, 'open-since-boot'), 'a-boot-before-the-crash\n');
    writeFileSync(join(db, 'state.mdb'), Buffer.alloc(256 * 1024, 0x5a));
    cell.cell.start('n1');
    await cell.cell.waitReady(30_000);
    // Linearizable: ready says applied >= the commit index this node knows, which right after a
    // restart can lag the log until the new term's first entry commits (a serializable read raced).
    const all = await http(`${url}/v1/kv/r/?prefix=true`);
    assert.equal(all.body.count, 45, 'every acknowledged key is back');
    assert.equal(all.body.revision, revision, 'at the same revision');
    assert.match(cell.cell.tail('n1', 200), /OS restarted/);
  } finally {
    await cell.close();
  }
});
