// safeUntil arithmetic with an injected clock: it is counted from the SEND time of the last
// acknowledged renewal (not the time the answer arrived), minus the safety margin; it never moves
// backwards for a late old acknowledgement; and the default margins and renewal pace are sane.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SafeUntil, defaultSafetyMarginMs, renewalDelayMs } from '../../../src/client/index.js';

test('safeUntil = send time of the acknowledged renewal + granted TTL - margin', () => {
  const safe = new SafeUntil(500);
  assert.equal(safe.isSafe(0), false);
  // Sent at 1,000, answered at 4,000 (a slow answer): the promise still counts from 1,000.
  assert.equal(safe.acknowledge(1_000, 5_000), 5_500);
  assert.equal(safe.isSafe(4_000), true);
  assert.equal(safe.isSafe(5_499), true);
  assert.equal(safe.isSafe(5_500), false);
  assert.equal(safe.remainingMs(4_000), 1_500);
  assert.equal(safe.remainingMs(9_000), 0);
});

test('a late acknowledgement of an older renewal never moves safeUntil backwards', () => {
  const safe = new SafeUntil(1_000);
  safe.acknowledge(3_000, 10_000); // 12,000
  safe.acknowledge(2_000, 10_000); // older send, arrived later: ignored
  assert.equal(safe.valueMs, 12_000);
  safe.acknowledge(4_000, 10_000);
  assert.equal(safe.valueMs, 13_000);
  // A shorter granted TTL on a newer renewal can lower the candidate, but not below what holds.
  safe.acknowledge(4_500, 5_000);
  assert.equal(safe.valueMs, 13_000);
});

test('default margin and renewal pace', () => {
  assert.equal(defaultSafetyMarginMs(5_000), 500);
  assert.equal(defaultSafetyMarginMs(60_000), 6_000);
  assert.equal(defaultSafetyMarginMs(600), 300); // never more than half the TTL
  assert.equal(renewalDelayMs(9_000), 3_000);
  // Renewing at a third of the TTL leaves two more tries before safeUntil with the default margin.
  for (const ttlMs of [5_000, 10_000, 30_000]) {
    assert.ok(3 * renewalDelayMs(ttlMs) <= ttlMs);
    assert.ok(renewalDelayMs(ttlMs) * 2 < ttlMs - defaultSafetyMarginMs(ttlMs));
  }
  assert.throws(() => new SafeUntil(-1), RangeError);
});

test('renewals are spread: sessions answered together do not renew together again', () => {
  // Up to a fifth earlier than a third of the TTL, never later.
  assert.equal(renewalDelayMs(9_000, 0), 3_000);
  assert.equal(renewalDelayMs(9_000, 0.5), 2_700);
  assert.equal(renewalDelayMs(9_000, 0.999_999), 2_400);
  // A herd of 1,000 sessions acknowledged at one instant, with the client's random draws: their
  // next renewals cover most of the 600 ms window instead of one instant.
  let seed = 12345;
  const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const next = Array.from({ length: 1_000 }, () => renewalDelayMs(9_000, random()));
  assert.ok(Math.max(...next) - Math.min(...next) > 500, 'spread over the window');
  assert.ok(next.every((ms) => ms >= 2_400 && ms <= 3_000));
  assert.ok(new Set(next.map((ms) => Math.floor(ms / 100))).size >= 6, 'no bucket of 100 ms holds them all');
});
