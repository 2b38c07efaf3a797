// The leader's store upgrade decision: it proposes the newest format every other member of the
// configuration (voters, outgoing voters, learners) applies, read off the version each accepted
// on a peer connection, only while it leads and the store is older. One member not connected
// keeps the store where it is; one on a format-3 build (version 4) lets it go to 3, not 4. The real-process path (old builds rolled to
// this one) is test/cluster/store-upgrade.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { storeFormatLatest, type Command } from '../../../src/mvcc/index.js';
import { StoreUpgrader, upgradeDecision, type UpgradeView } from '../../../src/node/store-upgrade.js';
import { storeFormat3Version, storeFormat4Version, storeFormat5Version } from '../../../src/transport/index.js';

const threeVoters = { voters: [1, 2, 3], votersOutgoing: [], learners: [] };

function view(overrides: Partial<UpgradeView> & { versions?: Record<number, number | null> }): UpgradeView {
  const versions = overrides.versions ?? { 2: storeFormat5Version, 3: storeFormat5Version };
  return {
    self: 1, role: 'leader', storeFormat: 2, confState: threeVoters,
    acceptedVersion: (id) => versions[id] ?? null,
    ...overrides,
  };
}

test('the newest format is 5; a version 4 peer applies 3, a version 5 peer 4, a version 6 peer 5', () => {
  assert.equal(storeFormatLatest, 5);
  assert.equal(storeFormat3Version, 4);
  assert.equal(storeFormat4Version, 5);
  assert.equal(storeFormat5Version, 6);
});

test('a leader whose every peer accepted version 6 proposes format 5, from any older format', () => {
  assert.deepEqual(upgradeDecision(view({})), { propose: 5 });
  assert.deepEqual(upgradeDecision(view({ storeFormat: 1 })), { propose: 5 }, 'format 1 goes straight to 5');
  assert.deepEqual(upgradeDecision(view({ storeFormat: 4 })), { propose: 5 });
  // Every peer on a format-4 build (version 5): to 4, and there it waits.
  assert.deepEqual(upgradeDecision(view({ versions: { 2: 5, 3: 5 } })), { propose: 4 });
  assert.deepEqual(upgradeDecision(view({ storeFormat: 4, versions: { 2: 6, 3: 5 } })),
    { wait: 'member 3 speaks peer protocol 5 (format 5 needs 6)' });
});

test('with a member on a format-3 build (version 4) the store goes to 3 and waits there', () => {
  assert.deepEqual(upgradeDecision(view({ versions: { 2: 5, 3: 4 } })), { propose: 3 });
  assert.deepEqual(upgradeDecision(view({ storeFormat: 1, versions: { 2: 4, 3: 4 } })), { propose: 3 });
  assert.deepEqual(upgradeDecision(view({ storeFormat: 3, versions: { 2: 6, 3: 4 } })),
    { wait: 'member 3 speaks peer protocol 4 (format 4 needs 5)' });
});

test('nothing is proposed by a follower, for a store already at 5, or while any member is too old or away', () => {
  assert.ok('wait' in upgradeDecision(view({ role: 'follower' })));
  assert.ok('wait' in upgradeDecision(view({ storeFormat: 5 })));
  assert.deepEqual(upgradeDecision(view({ versions: { 2: 5, 3: 3 } })),
    { wait: 'member 3 speaks peer protocol 3 (format 3 needs 4)' });
  assert.deepEqual(upgradeDecision(view({ versions: { 2: 5, 3: null } })), { wait: 'member 3 is not connected' });
  // A learner applies the log too; so does a voter on its way out of a joint configuration.
  const withLearner = { voters: [1, 2, 3], votersOutgoing: [], learners: [4] };
  assert.deepEqual(upgradeDecision(view({ confState: withLearner, versions: { 2: 5, 3: 5, 4: 2 } })),
    { wait: 'member 4 speaks peer protocol 2 (format 3 needs 4)' });
  const joint = { voters: [1, 2], votersOutgoing: [1, 2, 5], learners: [] };
  assert.deepEqual(upgradeDecision(view({ confState: joint, versions: { 2: 5 } })), { wait: 'member 5 is not connected' });
  assert.deepEqual(upgradeDecision(view({ confState: joint, versions: { 2: 6, 5: 6 } })), { propose: 5 });
});

test('the upgrader proposes once at a time, and again after a failure', async () => {
  const proposed: Command[] = [];
  let answer: (ok: boolean) => void = () => {};
  const upgrader = new StoreUpgrader({
    view: () => view({}),
    proposer: {
      propose: (op) => {
        proposed.push(op);
        return new Promise((resolve, reject) => {
          answer = (ok) => (ok ? resolve({ result: { type: 'upgradeStore', storeFormat: 5, revision: 9 }, duplicate: false } as never) : reject(new Error('no leader')));
        });
      },
    },
    timers: { setTimeout: () => ({ cancel: () => {} }), monotonicMs: () => 0 },
    log: { info: () => {}, warn: () => {}, error: () => {} },
  });
  upgrader.check();
  upgrader.check();
  assert.deepEqual(proposed, [{ type: 'upgradeStore', storeFormat: 5 }], 'one in flight');
  answer(false);
  await new Promise((resolve) => setImmediate(resolve));
  upgrader.check();
  assert.equal(proposed.length, 2, 'proposed again after the failure');
  answer(true);
  await new Promise((resolve) => setImmediate(resolve));
  upgrader.stop();
  upgrader.check();
  assert.equal(proposed.length, 2, 'nothing after stop');
});
