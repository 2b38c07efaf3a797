// The new-sessions gate (src/base/session-gate.ts) on an injected clock: at most `perSecond`
// opening requests a second are admitted; a storm's refusals are told staggered Retry-Afters,
// each second ahead booked for at most 90 % of the rate, so N refused together are spread over
// about N / rate seconds (never all told the same delay); guidance is capped at the window.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SessionGate } from '../../../src/base/session-gate.js';
import { OverloadedError } from '../../../src/base/errors.js';

function refusedAfter(gate: SessionGate): number | null {
  try {
    gate.admit('stream_open');
    return null;
  } catch (error) {
    assert.ok(error instanceof OverloadedError);
    assert.equal(error.details['reason'], 'session_rate');
    assert.equal(error.details['retryAfterSeconds'], error.retryAfterSeconds);
    return error.retryAfterSeconds as number;
  }
}

test('a storm of 1,000 opens at 100/s: 100 admitted, the rest told to come back spread over ~10 s, at most 90 a second', () => {
  const clock = { ms: 50_000 };
  const gate = new SessionGate({ perSecond: 100, windowSecondsMax: 60 }, () => clock.ms);
  const told = new Map<number, number>();
  let admitted = 0;
  for (let i = 0; i < 1000; i++) {
    const after = refusedAfter(gate);
    if (after === null) admitted++;
    else told.set(after, (told.get(after) ?? 0) + 1);
  }
  assert.equal(admitted, 100);
  assert.deepEqual([...told.keys()].sort((a, b) => a - b), Array.from({ length: 10 }, (_, i) => i + 1));
  for (const count of told.values()) assert.ok(count <= 90, `a second booked for ${count}`);
  assert.deepEqual(gate.counts(), { admitted: 100, refused: 900 });
});

test('guided clients coming back in their second are admitted at the rate; a lull refills the bucket', () => {
  const clock = { ms: 0 };
  const gate = new SessionGate({ perSecond: 10, windowSecondsMax: 60 }, () => clock.ms);
  for (let i = 0; i < 10; i++) assert.equal(refusedAfter(gate), null);
  assert.equal(refusedAfter(gate), 1);
  clock.ms += 1000;
  for (let i = 0; i < 10; i++) assert.equal(refusedAfter(gate), null, 'a second later: a second of tokens');
  assert.notEqual(refusedAfter(gate), null);
  clock.ms += 500;
  for (let i = 0; i < 5; i++) assert.equal(refusedAfter(gate), null, 'half a second: half the rate');
  assert.notEqual(refusedAfter(gate), null);
});

test('guidance past the window is capped at the window', () => {
  const clock = { ms: 0 };
  const gate = new SessionGate({ perSecond: 2, windowSecondsMax: 3 }, () => clock.ms);
  const told: number[] = [];
  for (let i = 0; i < 12; i++) {
    const after = refusedAfter(gate);
    if (after !== null) told.push(after);
  }
  // 90 % of 2 is 1 a second: seconds 1, 2, 3, then every later one told 3.
  assert.deepEqual(told, [1, 2, 3, 3, 3, 3, 3, 3, 3, 3]);
});
