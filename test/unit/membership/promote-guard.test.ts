// Promotion over a stub driver: a learner is promoted only in sync with the leader, and a learner
// registered without a client URL (etcd's MemberAdd names none) never, since the cell could not
// forward to it if it led.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemberDirectory } from '../../../src/membership/member-directory.js';
import { Membership, type MembershipDriver } from '../../../src/membership/membership.js';
import type { MemberPeers } from '../../../src/membership/member-peers.js';
import type { Timers } from '../../../src/base/timers.js';
import type { ConfState, RaftStatus } from '../../../src/raft/index.js';

function membership(learnerMatch: number): Membership {
  const conf: ConfState = { voters: [1], votersOutgoing: [], learners: [2, 3] };
  const status = {
    confState: conf,
    commitIndex: 5000,
    progress: new Map([[2, { match: learnerMatch, next: learnerMatch + 1, state: 'replicate' }], [3, { match: learnerMatch, next: learnerMatch + 1, state: 'replicate' }]]),
  } as unknown as RaftStatus;
  const driver: MembershipDriver = {
    isLeader: true,
    leaderId: 1,
    status: () => status,
    proposeConfChange: () => ({ ok: false, reason: 'notLeader' }) as never,
    transferLeadership: () => {},
    flush: () => {},
  };
  const directory = new MemberDirectory([
    { id: 1, name: 'n1', peerUrl: 'http://h:1', clientUrl: 'http://h:11' },
    { id: 2, name: 'member-h-2', peerUrl: 'http://h:2', clientUrl: '' },
    { id: 3, name: 'n3', peerUrl: 'http://h:3', clientUrl: 'http://h:13' },
  ]);
  const config = { memberId: 1, peerDial: new Map(), electionTicks: 10, tickMs: 50, requestTimeoutMs: 3000 };
  const peers = { appliedConf: conf } as unknown as MemberPeers;
  const log = { info: () => {}, warn: () => {} };
  return new Membership(config, driver, { membersRecord: () => null }, directory, peers, {} as Timers, log);
}

test('a learner without a client URL is not promoted; one not in sync is refused as such first', async () => {
  await assert.rejects(membership(10).promote(2), (error: { details: Record<string, unknown> }) => error.details['reason'] === 'learner_not_in_sync');
  await assert.rejects(membership(5000).promote(2), (error: { details: Record<string, unknown>; message: string }) =>
    error.details['reason'] === 'no_client_url' && /baton member add/.test(error.message));
  // A learner with a client URL goes on to the change (refused here by the stub driver, after the checks).
  await assert.rejects(membership(5000).promote(3), (error: { details: Record<string, unknown> }) => error.details['reason'] !== 'no_client_url');
});
