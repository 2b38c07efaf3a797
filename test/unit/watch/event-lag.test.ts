// The event-lag ring (src/api/stream/event-lag.ts): a delivered revision is timed from the apply
// that brought it; revisions from before the ring (catch-up of old history) are not timed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventLag } from '../../../src/api/stream/event-lag.js';

test('a revision is timed from the apply that brought it; older history is not', () => {
  let now = 0;
  const seen: number[] = [];
  const lag = new EventLag(10, (s) => seen.push(s), () => now, 4);
  now = 1000; lag.applied(12); // revisions 11..12
  now = 1100; lag.applied(15); // 13..15
  now = 1150;
  lag.delivered(11);
  lag.delivered(14);
  lag.delivered(15);
  lag.delivered(9); // before the ring: not timed
  lag.delivered(16); // not applied yet: not timed
  assert.deepEqual(seen, [0.15, 0.05, 0.05]);
  for (const [at, revision] of [[1200, 16], [1300, 17], [1400, 18]] as const) {
    now = at;
    lag.applied(revision);
  }
  seen.length = 0;
  now = 1500;
  lag.delivered(12); // evicted with the ring full: its apply time is gone
  lag.delivered(13);
  assert.deepEqual(seen, [0.4]);
});
