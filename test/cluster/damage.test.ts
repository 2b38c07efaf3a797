// Damage on disk is never hidden: a damaged newest snapshot is skipped for an older intact one
// (with a log line) and the node serves every acknowledged key; a flipped byte in the middle of
// the WAL stops the node at start-up with a message naming the file and the byte offset.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openSync, readSync, writeSync, closeSync, readdirSync, statSync } from 'node:fs';
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

test('a damaged snapshot is skipped for an older one; a damaged WAL stops the node naming the file', async () => {
  const cell = await startTestCell({ size: 1, extraArgs: ['--snapshot-entries', '10'] });
  try {
    const url = cell.cell.clientUrl('n1');
    for (let i = 0; i < 45; i++) await putSurely(`${url}/v1/kv/d/${i}`, `v${i}`);
    await cell.cell.stopAll();
    const snapDir = join(cell.dataDir, 'n1', 'snap');
    const snaps = readdirSync(snapDir).filter((name) => name.endsWith('.snap')).sort();
    assert.ok(snaps.length >= 2, `two snapshots kept (${snaps.join(', ')})`);
    const newest = join(snapDir, snaps[snaps.length - 1] as string);
    flipByte(newest, Math.floor(statSync(newest).size / 2));

    cell.cell.start('n1');
    await cell.cell.waitReady(20_000);
    const all = await http(`${url}/v1/kv/d/?prefix=true`);
    assert.equal(all.body.count, 45, 'every acknowledged key is served after the fallback');
    assert.match(cell.cell.tail('n1', 200), /damaged/);
    await cell.cell.stopAll();

    const walDir = join(cell.dataDir, 'n1', 'wal');
    const segment = readdirSync(walDir).filter((name) => !name.includes('tmp')).sort()[0] as string;
    flipByte(join(walDir, segment), 120);
    cell.cell.start('n1');
    const code = await cell.cell.waitExit('n1', 20_000);
    assert.equal(code, 2);
    const output = cell.cell.tail('n1', 50);
    assert.match(output, /refusing to start/);
    assert.ok(output.includes(join(walDir, segment)), `the message names the file: ${output}`);
    assert.match(output, /offset \d+/);
  } finally {
    await cell.close();
  }
});
