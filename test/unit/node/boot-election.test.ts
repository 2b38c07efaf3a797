import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bootElectionAdvance } from '../../../src/node/boot-election.js';

const members = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `n${i + 1}` })) as never;

test('advances once, on the first tick with a peer connected', () => {
  let connected = false;
  const advance = bootElectionAdvance({ initialElectionTickAdvance: true, electionTicks: 10, members: members(3) }, () => connected);
  assert.deepEqual([advance(), advance(), advance()], [false, false, false]);
  connected = true;
  assert.deepEqual([advance(), advance(), advance()], [true, false, false]);
});

test('a one-member cell advances at once; with no peer for two timeouts, or the flag off, never', () => {
  assert.equal(bootElectionAdvance({ initialElectionTickAdvance: true, electionTicks: 10, members: members(1) }, () => false)(), true);
  let connected = false;
  const late = bootElectionAdvance({ initialElectionTickAdvance: true, electionTicks: 10, members: members(3) }, () => connected);
  for (let tick = 0; tick < 20; tick++) assert.equal(late(), false);
  connected = true;
  assert.equal(late(), false, 'past the boot window an advance could only shorten a running timeout');
  const off = bootElectionAdvance({ initialElectionTickAdvance: false, electionTicks: 10, members: members(1) }, () => true);
  assert.equal(off(), false);
});
