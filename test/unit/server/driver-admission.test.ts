// An overloaded leader refuses new work instead of queueing more than it can commit within the
// clients' timeout: once its oldest uncommitted entry has waited past `uncommittedAgeMsMax`, its
// own proposals fail with OverloadedError (429) and forwarded ones are dropped; once the backlog
// commits, proposals are taken again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OverloadedError } from '../../../src/base/errors.js';
import { SeededRandom } from '../../../src/base/random.js';
import {
  createRaftNode, defaultRaftConfig, type Entry, type Ready, type Snapshot,
} from '../../../src/raft/index.js';
import { NodeDriver } from '../../../src/server/driver.js';
import type { LogStore, StateMachine, Timers } from '../../../src/server/types.js';

class ManualDisk implements LogStore {
  readonly pending: (() => void)[] = [];
  persist(_ready: Ready): Promise<void> {
    return new Promise((resolve) => this.pending.push(resolve));
  }
  async saveSnapshot(_snapshot: Snapshot): Promise<void> {}
  completeAll(): void {
    for (const done of this.pending.splice(0)) done();
  }
}

class CountingMachine implements StateMachine<number> {
  applied = 0;
  appliedIndex(): number {
    return this.applied;
  }
  applyBatch(entries: readonly Entry[]): number[] {
    return entries.map((entry) => (this.applied = entry.index));
  }
  snapshotData(): Uint8Array {
    return new Uint8Array();
  }
  restore(): void {}
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

async function settle(disk: ManualDisk): Promise<void> {
  for (let i = 0; i < 4; i++) {
    disk.completeAll();
    await flush();
  }
}

test('an overloaded leader refuses proposals until its backlog commits', async () => {
  let nowMs = 0;
  const timers: Timers = { setTimeout: () => ({ cancel: () => {} }), monotonicMs: () => nowMs };
  const core = createRaftNode({ ...defaultRaftConfig, id: 1 }, {
    hardState: { term: 0, vote: 0, commit: 0 }, snapshot: null, entries: [],
    initialConfState: { voters: [1], votersOutgoing: [], learners: [] }, appliedIndex: 0,
  }, new SeededRandom(7n));
  const disk = new ManualDisk();
  const driver = new NodeDriver(core, disk, new CountingMachine(), { send: () => {} }, timers,
    { requestTimeoutMs: 10_000, snapshotEntries: 1_000_000, readysInFlightMax: 4, uncommittedAgeMsMax: 1_000 },
    { onFatal: (e) => { throw e; } });
  core.campaign();
  driver.tick();
  await settle(disk);
  assert.equal(driver.isLeader, true);

  // The write of the first entry does not finish: it stays uncommitted while time passes.
  const first = driver.propose(driver.newProposalId(), new Uint8Array([1]));
  nowMs += 999;
  const second = driver.propose(driver.newProposalId(), new Uint8Array([2]));
  nowMs += 2;
  await assert.rejects(driver.propose(driver.newProposalId(), new Uint8Array([3])), OverloadedError);
  driver.receive([{ type: 'propose', from: 2, to: 1, term: 1, commands: [new Uint8Array([4])] }]);
  assert.equal(driver.forwardedDropped, 1, 'a forwarded proposal is dropped, not appended');

  // The backlog commits: new proposals are welcome again.
  await settle(disk);
  assert.ok((await first) > 0 && (await second) > 0);
  const third = driver.propose(driver.newProposalId(), new Uint8Array([5]));
  await settle(disk);
  assert.ok((await third) > 0);
});
