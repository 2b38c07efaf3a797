// The driver with several Readys on their way to disk: new entries go to the log store while
// earlier writes are in flight, Readys still complete in hand-off order (no acknowledgement or
// apply overtakes an earlier write), and a committed entry is applied only once the entry on
// this node's disk at its index is that entry (not an older one a write in flight replaces).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRandom } from '../../../src/base/random.js';
import { createRaftNode, defaultRaftConfig, EntryType, type Entry, type RaftMessage } from '../../../src/raft/index.js';
import { NodeDriver } from '../../../src/driver/driver.js';
import { frameCommand } from '../../../src/driver/entry-frame.js';
import type { StateMachine, Timers } from '../../../src/driver/types.js';
import { HeldDisk } from './driver-doubles.js';

class TextMachine implements StateMachine<string> {
  applied = 0;
  readonly log: string[] = [];
  appliedIndex(): number {
    return this.applied;
  }
  applyBatch(entries: readonly Entry[]): string[] {
    return entries.map((entry) => {
      assert.equal(entry.index, this.applied + 1, 'applied in order, without gaps');
      this.applied = entry.index;
      const text = new TextDecoder().decode(entry.data);
      if (text !== '') this.log.push(`${entry.index}:${text}`);
      return text;
    });
  }
  snapshotData(): Uint8Array {
    return new Uint8Array();
  }
  restore(): void {}
}

const timers: Timers = {
  setTimeout: () => ({ cancel: () => {} }),
  monotonicMs: () => 0,
};
const flush = () => new Promise((resolve) => setImmediate(resolve));
const text = (s: string) => new TextEncoder().encode(s);

function node(id: number, voters: number[], readysInFlightMax = 4) {
  const core = createRaftNode({ ...defaultRaftConfig, id }, {
    hardState: { term: 0, vote: 0, commit: 0 }, snapshot: null, entries: [],
    initialConfState: { voters, votersOutgoing: [], learners: [] }, appliedIndex: 0,
  }, new SeededRandom(5n));
  const disk = new HeldDisk();
  const machine = new TextMachine();
  const sent: RaftMessage[] = [];
  const driver = new NodeDriver(core, disk, machine, { send: (m) => sent.push(...m) }, timers,
    { requestTimeoutMs: 60_000, snapshotEntries: 1_000_000, readysInFlightMax },
    { onFatal: (e) => { throw e; } });
  driver.start([]);
  return { core, disk, machine, driver, sent };
}

test('pipelined Readys: new entries go to disk at once, completions take effect in order', async () => {
  const { core, disk, machine, driver } = node(1, [1]);
  core.campaign();
  driver.tick();
  for (let i = 0; i < 3; i++) {
    disk.completeAll();
    await flush();
  }
  assert.equal(driver.isLeader, true);
  const first = driver.propose(driver.newProposalId(), text('a'));
  const second = driver.propose(driver.newProposalId(), text('b'));
  assert.equal(disk.pending.length, 2, 'the second entry did not wait for the first write');
  // The newer write finishes first: nothing may take effect before the older one has.
  disk.complete(1);
  await flush();
  assert.deepEqual(machine.log, []);
  disk.complete(0);
  await flush();
  disk.completeAll(); // a commit-only change may be waiting for a write to ride along
  await flush();
  assert.deepEqual(machine.log, [`${machine.applied - 1}:a`, `${machine.applied}:b`]);
  assert.equal(await first, 'a');
  assert.equal(await second, 'b');
});

test('a committed entry whose index is being overwritten on disk waits for that write', async () => {
  // One Ready at a time (the default): the overwrite and the commit travel in the same Ready.
  const { disk, machine, driver, sent } = node(2, [1, 2, 3], 1);
  const entry = (index: number, term: number, s: string): Entry =>
    ({ index, term, type: EntryType.normal, data: frameCommand(new Uint8Array(16).fill(index + term), text(s)) });
  // Leader 1 (term 1) replicates 1..3; only 1 is committed.
  driver.receive([{
    type: 'append', from: 1, to: 2, term: 1, prevIndex: 0, prevTerm: 0,
    entries: [entry(1, 1, 'one'), entry(2, 1, 'old-two'), entry(3, 1, 'old-three')], commit: 1,
  }]);
  disk.completeAll();
  await flush();
  assert.deepEqual(machine.log, ['1:one']);
  // Leader 3 (term 2) replaces 2..3 and says they are committed. Index 2 and 3 are on disk, but
  // as the old entries: applying before the overwrite is durable would apply what the disk
  // does not hold.
  sent.length = 0;
  driver.receive([{
    type: 'append', from: 3, to: 2, term: 2, prevIndex: 1, prevTerm: 1,
    entries: [entry(2, 2, 'two'), entry(3, 2, 'three')], commit: 3,
  }]);
  await flush();
  assert.deepEqual(machine.log, ['1:one'], 'nothing applied while the overwrite is in flight');
  assert.equal(sent.filter((m) => m.type === 'appendResponse').length, 0, 'no acknowledgement before the write');
  disk.completeAll();
  await flush();
  assert.deepEqual(machine.log, ['1:one', '2:two', '3:three']);
  assert.ok(sent.some((m) => m.type === 'appendResponse' && !m.reject && m.index === 3));
});
