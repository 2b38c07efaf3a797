// Renewals first under overload: the read gate admits range reads up to its budget, lists up to a
// smaller one, and refuses the rest at once with a retryable `overloaded` (429) instead of
// queueing them; releasing a read makes room again. Keepalives never pass through it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OverloadedError } from '../../../src/base/errors.js';
import { ReadGate } from '../../../src/kv/read-gate.js';

test('lists are shed first, then reads; releases make room', () => {
  const gate = new ReadGate({ readsInFlightMax: 3, listsInFlightMax: 1 });
  const list = gate.enter(true);
  assert.throws(() => gate.enter(true), (error: unknown) => error instanceof OverloadedError && error.retryable);
  const a = gate.enter(false);
  const b = gate.enter(false);
  assert.throws(() => gate.enter(false), OverloadedError);
  list();
  const c = gate.enter(false);
  assert.throws(() => gate.enter(true), OverloadedError, 'the reads budget is full');
  a();
  const list2 = gate.enter(true);
  assert.throws(() => list(), /released once/);
  list2();
  b();
  c();
});
