// Pairing events into records (info and never-completed operations stay open forever, a process
// may go on after a timeout), and the checkers' purity: src/check reads no clock and does no I/O,
// so a recorded history gives the same answer every time it is checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkLinearizable, isKvRecord, pairHistory, type HistoryEvent } from '../../../src/check/index.js';

test('events pair into records; info and unfinished operations never complete', () => {
  const events: HistoryEvent[] = [
    { type: 'invoke', process: 1, timeMs: 0, operation: { type: 'write', key: 'x', value: 'a' } },
    { type: 'invoke', process: 2, timeMs: 1, operation: { type: 'read', key: 'x' } },
    { type: 'info', process: 1, timeMs: 50, error: 'timeout' },
    { type: 'ok', process: 2, timeMs: 60, result: { type: 'read', value: 'a' } },
    { type: 'invoke', process: 1, timeMs: 70, operation: { type: 'write', key: 'x', value: 'b' } },
    { type: 'invoke', process: 2, timeMs: 71, operation: { type: 'read', key: 'x' } },
    { type: 'fail', process: 2, timeMs: 80, error: 'unavailable' },
  ];
  const records = pairHistory(events);
  assert.deepEqual(
    records.map((r) => [r.process, r.status, r.invokeMs, r.completeMs]),
    [[1, 'info', 0, Infinity], [2, 'ok', 1, 60], [1, 'info', 70, Infinity], [2, 'fail', 71, 80]],
  );
  assert.equal(records[0]!.error, 'timeout');
  assert.equal(checkLinearizable(records.filter(isKvRecord)).verdict, 'ok');
  assert.throws(() => pairHistory([events[0]!, events[0]!]), /invoked twice/);
});

test('src/check imports nothing from node and reads no clock', () => {
  // From dist/test/unit/check the sources are four folders up; a build elsewhere has its own
  // compiled src/check three folders up, which must be just as pure.
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, '..', '..', '..', '..', 'src', 'check'), join(here, '..', '..', '..', 'src', 'check')];
  const folder = candidates.find((dir) => existsSync(join(dir, 'index.ts'))) ?? candidates[1]!;
  for (const name of readdirSync(folder).filter((f) => f.endsWith('.ts') || f.endsWith('.js'))) {
    const text = readFileSync(join(folder, name), 'utf8');
    assert.doesNotMatch(text, /from\s+['"]node:|Date\.now|new Date|Math\.random|performance\.now|setTimeout|(?<![.\w])process\./, name);
  }
});
