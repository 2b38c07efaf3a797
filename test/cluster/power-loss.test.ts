// Power loss under a real node. The store's commits are deferred and made durable at checkpoints,
// so after a crash of the machine the disk holds the store as its last checkpoint's sync left it,
// plus any mix of the pages written since. The node under test copies what is certainly on disk
// after every checkpoint (fault injection: state.mdb.synced and checkpoint.synced); after a kill
// -9 in the middle of a write load the test builds the disk a power cut could leave (each 4 KiB
// block from the synced copy or from the file at the kill, at random), says the OS restarted,
// and restarts the node: it must go back to the checkpoint, replay its WAL (every acknowledged
// entry was fsynced there) and serve every acknowledged write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SeededRandom, chance } from '../../src/base/random.js';
import { http, putSurely, sleep, startTestCell } from './harness.js';

const blockBytes = 4096;

function powerLossImage(synced: Buffer, crashed: Buffer, seed: bigint): Buffer {
  const random = new SeededRandom(seed);
  const image = Buffer.alloc(crashed.length);
  for (let at = 0; at < crashed.length; at += blockBytes) {
    const end = Math.min(at + blockBytes, crashed.length);
    if (chance(random, 0.5)) crashed.copy(image, at, at, end);
    else if (at < synced.length) synced.copy(image, at, at, Math.min(end, synced.length));
  }
  // The worst case for the meta pages: the newest ones arrived, naming pages that may not have.
  crashed.copy(image, 0, 0, Math.min(16384, crashed.length));
  return image;
}

test('after power loss a node reopens its store at the last checkpoint and replays its WAL, losing no acknowledged write', async () => {
  process.env['BATON_FAULT_INJECTION'] = '1';
  process.env['BATON_FAULT_CONTROL'] = '/nonexistent/baton-faults.json'; // no faults, only the copies
  process.env['BATON_FAULT_SYNCED_COPY'] = '1';
  const cell = await startTestCell({ size: 1 });
  try {
    const url = cell.cell.clientUrl('n1');
    const value = (i: number, round: number): string => `v${round}-${i}-`.padEnd(200 + (i % 7) * 300, 'x');
    for (let i = 0; i < 200; i += 20) {
      await Promise.all(Array.from({ length: 20 }, (_, j) => putSurely(`${url}/v1/kv/p/${i + j}`, value(i + j, 1))));
    }
    // Overwrites and deletes free pages that later commits reuse.
    for (let i = 0; i < 100; i += 20) {
      await Promise.all(Array.from({ length: 20 }, (_, j) => putSurely(`${url}/v1/kv/p/${i + j}`, value(i + j, 2))));
    }
    const deleted = await http(`${url}/v1/kv/p/1?prefix=true`, { method: 'DELETE' }); // p/1, p/10-19, p/100-199
    assert.equal(deleted.status, 200);
    const acknowledged = new Map<string, string>();
    for (let i = 0; i < 200; i++) {
      const key = `/p/${i}`;
      if (!key.startsWith('/p/1')) acknowledged.set(key, value(i, i < 100 ? 2 : 1));
    }
    // More writes, acknowledged ones recorded, until the kill lands in the middle of them.
    let stop = false;
    let late = 0;
    const writers = Array.from({ length: 8 }, async (_, w) => {
      for (let n = 0; !stop && n < 2000; n++) {
        const key = `/q/${w}/${n}`;
        const body = `late-${w}-${n}`;
        const res = await http(`${url}/v1/kv${key}`, { method: 'PUT', body }).catch(() => null);
        if (res?.status === 200 || res?.status === 201) {
          acknowledged.set(key, body);
          late++;
        }
      }
    });
    // Kill once enough late writes are in (a slow CI machine needs longer than a quiet one), still
    // in the middle of the load: the writers keep going until the kill.
    const deadline = Date.now() + 20_000;
    while (late < 100 && Date.now() < deadline) await sleep(50);
    cell.cell.signal('n1', 'SIGKILL');
    stop = true;
    await cell.cell.waitExit('n1');
    await Promise.all(writers);

    const db = join(cell.dataDir, 'n1', 'db');
    const synced = readFileSync(join(db, 'state.mdb.synced'));
    const crashed = readFileSync(join(db, 'state.mdb'));
    writeFileSync(join(db, 'state.mdb'), powerLossImage(synced, crashed, 11n));
    writeFileSync(join(db, 'checkpoint'), readFileSync(join(db, 'checkpoint.synced')));
    writeFileSync(join(db, 'open-since-boot'), 'a-boot-before-the-crash\n');
    cell.cell.start('n1');
    await cell.cell.waitReady(30_000);
    assert.match(cell.cell.tail('n1', 200), /went back to its last checkpoint/);
    const all = await http(`${url}/v1/kv/?prefix=true&limit=100000`);
    assert.equal(all.status, 200);
    const served = new Map<string, string>((all.body.kvs as { key: string; value: string }[]).map((kv) => [kv.key, kv.value]));
    assert.ok(late >= 100, `late writes acknowledged before the kill (${late})`);
    for (const [key, body] of acknowledged) assert.equal(served.get(key), body, `acknowledged ${key}`);
    for (const key of served.keys()) {
      if (key.startsWith('/p/')) assert.ok(acknowledged.has(key), `${key} was deleted`);
    }
  } finally {
    await cell.close();
  }
});
