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
