// `snapshot save`'s progress bar: drawn only on a terminal, at most ten times a second, a fraction
// of the server's estimate that stops at 99% until the end, and erased when done.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { progressBar } from '../../../src/cli/progress.js';

function fakeStream(isTTY: boolean): { stream: NodeJS.WriteStream; written: string[] } {
  const written: string[] = [];
  const stream = { isTTY, write: (text: string) => written.push(text) > 0 } as unknown as NodeJS.WriteStream;
  return { stream, written };
}

test('no terminal: nothing is drawn', () => {
  const { stream, written } = fakeStream(false);
  const progress = progressBar('snapshot', 1000, stream, () => 0);
  progress.add(500);
  progress.done();
  assert.deepEqual(written, []);
});

test('a terminal: a bar against the estimate, redrawn at most every 100 ms, capped at 99%, erased at the end', () => {
  const { stream, written } = fakeStream(true);
  let clock = 0;
  const mib = 1024 * 1024;
  const progress = progressBar('snapshot', 10 * mib, stream, () => clock);
  clock = 1000;
  progress.add(5 * mib);
  assert.match(written.at(-1) as string, /^\rsnapshot \[#{15}\.{15}\] 50% 5\.0 MiB of ~10\.0 MiB, 5\.0 MiB\/s\x1b\[K$/);
  clock = 1050;
  progress.add(1 * mib);
  assert.equal(written.length, 1, 'not redrawn within 100 ms');
  clock = 2000;
  progress.add(20 * mib); // more than the estimate
  assert.match(written.at(-1) as string, /\] 99% 26\.0 MiB of ~10\.0 MiB/);
  progress.done();
  assert.equal(written.at(-1), '\r\x1b[K');
});

test('a terminal without an estimate: bytes and rate only', () => {
  const { stream, written } = fakeStream(true);
  let clock = 0;
  const progress = progressBar('snapshot', null, stream, () => clock);
  clock = 2000;
  progress.add(4 * 1024 * 1024);
  assert.match(written.at(-1) as string, /^\rsnapshot 4\.0 MiB, 2\.0 MiB\/s/);
});
