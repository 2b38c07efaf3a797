// Renewals share leadership confirmations, but never one that started before they arrived: a
// quorum round already in flight cannot vouch for a renewal that came later (a newer leader may
// have promoted its tracker meanwhile). Rounds are spaced by confirmIntervalMs.
import { AccessGuard } from '../../../src/auth/index.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseService, type LeaseDriver, type LeaseStore } from '../../../src/lease/lease-service.js';
import { defaultLeaseServiceOptions } from '../../../src/lease/lease-config.js';
import { HttpLeaseForwarder } from '../../../src/lease/forward/http-forwarder.js';
import { defaultMvccLimits } from '../../../src/mvcc/index.js';
import { FakeTimers } from '../base/fake-timers.js';

function setup(): { service: LeaseService; rounds: { resolve: () => void }[]; timers: FakeTimers } {
  const timers = new FakeTimers(1_000);
  const leases = [1, 2, 3].map((id) => ({ id, ttlMs: 10_000, remainingMs: 10_000, keyCount: 0 }));
  const store = {
    appliedTerm: 2,
    revision: 7,
    limits: defaultMvccLimits,
    lease: (id: number) => leases.find((l) => l.id === id) ?? null,
    leases: () => leases,
    leasesPage: () => leases,
    keysOfLease: () => [],
  } as unknown as LeaseStore;
  const rounds: { resolve: () => void }[] = [];
  const driver: LeaseDriver = {
    isLeader: true,
    leaderId: 1,
    status: () => ({ term: 2 }),
    linearizableRead: () => new Promise<void>((resolve) => rounds.push({ resolve })),
  };
  const proposer = { propose: () => Promise.reject(new Error('no proposals in this test')) };
  const service = new LeaseService(
    { memberId: 1, store, timers, driver, proposer, forwarder: new HttpLeaseForwarder([]), guard: new AccessGuard({ policyRecord: () => ({ version: 0, record: null }), keysOfLease: () => [] }) },
    { ...defaultLeaseServiceOptions, confirmIntervalMs: 10 },
  );
  service.onApplied([], []);
  return { service, rounds, timers };
}

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('a renewal waits for a round that starts after it arrived; those before a round share it', async () => {
  const { service, rounds, timers } = setup();
  const answered: number[] = [];
  void service.keepalive([1], false, '').then(() => answered.push(1));
  await flush();
  assert.equal(rounds.length, 1, 'the first renewal starts a round at once');
  void service.keepalive([2], false, '').then(() => answered.push(2));
  void service.keepalive([3], false, '').then(() => answered.push(3));
  await flush();
  assert.equal(rounds.length, 1, 'later renewals do not join the round in flight');
  rounds[0]?.resolve();
  await flush();
  assert.deepEqual(answered, [1], 'the round in flight answers only the renewal that preceded it');
  assert.equal(rounds.length, 1, 'the next round waits for the interval');
  timers.jump(10);
  await flush();
  assert.equal(rounds.length, 2, 'one round for both waiting renewals');
  rounds[1]?.resolve();
  await flush();
  assert.deepEqual(answered, [1, 2, 3]);
  service.stop();
});
