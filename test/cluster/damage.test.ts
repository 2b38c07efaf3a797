// Damage on disk is never hidden: a store whose pages were damaged across an OS crash stops the
// node at start-up naming the file (LMDB would abort on the first damaged page it reads), and a
// flipped byte in the middle of the WAL stops it with a message naming the file and the byte
// offset. (A damaged snapshot file, needed only when the store is behind the log's start, falls
// back to an older intact one: test/unit/node/durable-log.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openSync, readSync, writeSync, closeSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { http, putSurely, startTestCell } from './harness.js';

function flipByte(path: string, offset: number): void {
  const fd = openSync(path, 'r+');
  const byte = Buffer.alloc(1);
  readSync(fd, byte, 0, 1, offset);
  byte[0] = (byte[0] as number) ^ 0xff;
  writeSync(fd, byte, 0, 1, offset);
  closeSync(fd);
}

test('a store damaged across an OS crash and a damaged WAL each stop the node, naming the file', async () => {
  const cell = await startTestCell({ size: 1 });
  try {
    const url = cell.cell.clientUrl('n1');
    for (let i = 0; i < 300; i++) await putSurely(`${url}/v1/kv/d/${i}`, `v${i}-`.padEnd(400, 'x'));
    await cell.cell.stopAll();

    // The store's pages are damaged and the OS restarted: the checkpointed tree is walked before
    // it is trusted, and the node refuses to start instead of serving it.
    const store = join(cell.dataDir, 'n1', 'db', 'state.mdb');
    const intact = readFileSync(store);
    const damaged = Buffer.from(intact);
    damaged.fill(0x5a, 3 * 8192, damaged.length - 8192);
    writeFileSync(store, damaged);
    writeFileSync(join(cell.dataDir, 'n1', 'db', 'open-since-boot'), 'a-boot-before-the-crash\n');
    cell.cell.start('n1');
    assert.equal(await cell.cell.waitExit('n1', 20_000), 2);
    let output = cell.cell.tail('n1', 50);
    assert.match(output, /refusing to start/);
    assert.ok(output.includes(store), `the message names the file: ${output}`);
    writeFileSync(store, intact);
    cell.cell.start('n1');
    await cell.cell.waitReady(20_000);
    const all = await http(`${url}/v1/kv/d/?prefix=true`);
    assert.equal(all.body.count, 300, 'the intact store serves every acknowledged key');
    await cell.cell.stopAll();

    const walDir = join(cell.dataDir, 'n1', 'wal');
    const segment = readdirSync(walDir).filter((name) => !name.includes('tmp')).sort()[0] as string;
    flipByte(join(walDir, segment), 120);
    cell.cell.start('n1');
    const code = await cell.cell.waitExit('n1', 20_000);
    assert.equal(code, 2);
    output = cell.cell.tail('n1', 50);
    assert.match(output, /refusing to start/);
    assert.ok(output.includes(join(walDir, segment)), `the message names the file: ${output}`);
    assert.match(output, /offset \d+/);
  } finally {
    await cell.close();
  }
});
