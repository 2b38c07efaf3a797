// The durability checker: a final value explained by the last acknowledged write, by a later
// timed-out write, or by a write concurrent with the last one is accepted; an acknowledged write
// certainly followed by nothing yet missing from the final read is reported as lost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkDurability } from '../../../src/check/index.js';
import { cas, write } from './builders.js';

const finals = (entries: [string, string | null][]) => new Map(entries);

test('final values explained by a last, a concurrent or a timed-out write are accepted', () => {
  const records = [write(1, 0, 10, 'x', 'a'), write(2, 20, 30, 'x', 'b'), write(3, 25, 50, 'x', 'c')];
  assert.equal(checkDurability({ records, finalValues: finals([['x', 'b']]) }).verdict, 'ok');
  assert.equal(checkDurability({ records, finalValues: finals([['x', 'c']]) }).verdict, 'ok');
  const late = [...records, write(4, 60, 70, 'x', 'd', 'info')];
  assert.equal(checkDurability({ records: late, finalValues: finals([['x', 'd']]) }).verdict, 'ok');
  const swapped = [...records, cas(4, 60, 70, 'x', 'c', 'e', true)];
  assert.equal(checkDurability({ records: swapped, finalValues: finals([['x', 'e']]) }).verdict, 'ok');
});

test('an acknowledged write lost behind an older value is reported with the lost write', () => {
  const records = [write(1, 0, 10, 'x', 'a'), write(2, 20, 30, 'x', 'b')];
  const report = checkDurability({ records, finalValues: finals([['x', 'a']]) });
  assert.equal(report.verdict, 'violation');
  assert.equal(report.violations[0]!.kind, 'lost-write');
  assert.match(report.violations[0]!.message, /finally reads "a" .*\n  p2 \[20 \.\. 30\] ok   write x := "b"/);
  const empty = checkDurability({ records, finalValues: finals([['x', null]]) });
  assert.equal(empty.violations[0]!.kind, 'lost-write');
});

test('a value nobody wrote, a failed write, and a key never read back', () => {
  const records = [write(1, 0, 10, 'x', 'a'), write(2, 20, 30, 'x', 'b', 'fail')];
  const report = checkDurability({ records, finalValues: finals([['x', 'b']]) });
  assert.equal(report.violations[0]!.kind, 'unknown-value');
  const unread = checkDurability({ records, finalValues: finals([]) });
  assert.equal(unread.verdict, 'unknown');
});
