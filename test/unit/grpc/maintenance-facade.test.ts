// The Cluster and Maintenance facades over stubs: etcd's words for membership's refusals, the
// learner-only add, one http://HOST:PORT peer URL, MoveLeader's leader-only rule and its errors,
// and the alarm table (activate, list, deactivate, Status errors).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { InvalidArgumentError, KeyNotFoundError, PreconditionFailedError, UnavailableError } from '../../../src/base/errors.js';
import { HeaderSource } from '../../../src/api/grpc/header.js';
import { MaintenanceFacade, type MaintenanceAccess } from '../../../src/api/grpc/maintenance-service.js';
import { AlarmTable } from '../../../src/api/alarms.js';
import { MemberFacade, etcdMemberError, nameFor, type MemberChanges } from '../../../src/api/grpc/member-service.js';
import type { CellApi } from '../../../src/api/types.js';
import type { MemberView } from '../../../src/membership/membership.js';

const cell = {
  status: () => ({ clusterId: '00000000000000ff', member: 1, term: 4, revision: 9 }),
  revision: () => 9,
} as unknown as CellApi;
const headers = (): HeaderSource => new HeaderSource(cell);

const rejectsWith = (promise: Promise<unknown>, code: status, details: RegExp): Promise<void> =>
  assert.rejects(promise, (error: { code: number; details: string }) => {
    assert.equal(error.code, code, error.details);
    assert.match(error.details, details);
    return true;
  });

test('membership refusals in etcd\'s words, by code and reason', () => {
  const mapped = (error: Error): { code: number; details: string } => etcdMemberError(error) as { code: number; details: string };
  const notFound = mapped(new KeyNotFoundError('member 9 is not in the cell', { member: 9 }));
  assert.deepEqual([notFound.code, notFound.details], [status.NOT_FOUND, 'etcdserver: member not found']);
  assert.equal(mapped(new InvalidArgumentError('x', { reason: 'peer_url_exists' })).details, 'etcdserver: Peer URLs already exists');
  assert.equal(mapped(new PreconditionFailedError('x', { reason: 'already_voter' })).details, 'etcdserver: can only promote a learner member');
  assert.equal(mapped(new PreconditionFailedError('x', { reason: 'learner_not_in_sync' })).details,
    'etcdserver: can only promote a learner member which is in sync with leader');
  assert.equal(mapped(new PreconditionFailedError('x', { reason: 'too_many_learners' })).details, 'etcdserver: too many learner members in cluster');
  assert.match(mapped(new PreconditionFailedError('x', { reason: 'unhealthy_cell' })).details,
    /^etcdserver: re-configuration failed due to not enough started members/);
  const other = new UnavailableError('no leader');
  assert.equal(etcdMemberError(other), other, 'anything else goes through the error table');
  assert.equal(nameFor('http://10.0.0.7:2380'), 'member-10-0-0-7-2380');
});

test('MemberAdd: learners only, one http(s) peer URL, answered with the member and the members', async () => {
  const added: unknown[] = [];
  const members: MemberView[] = [{ id: 1, name: 'n1', peerUrl: 'http://h1:1', clientUrl: 'http://h1:2', role: 'voter' }];
  const membership = {
    members: () => members,
    leaderClientUrl: () => '',
    add: async (input: { name: string; peerUrl: string; clientUrl: string }) => {
      added.push(input);
      const member: MemberView = { id: 2, ...input, role: 'learner' };
      members.push(member);
      return { member, initialCluster: '', initialClusterClients: '' };
    },
  } as unknown as MemberChanges;
  const facade = new MemberFacade({ membership, linearizableRead: async () => {} }, headers(), new Map([['n1', 'http://h1:3']]));
  await rejectsWith(facade.add({ peerURLs: ['http://h2:1'], isLearner: false }), status.FAILED_PRECONDITION, /learners only/);
  await rejectsWith(facade.add({ peerURLs: ['http://h2:1', 'http://h2:9'], isLearner: true }), status.INVALID_ARGUMENT,
    /^etcdserver: given member URLs are invalid/);
  await rejectsWith(facade.add({ peerURLs: ['unix://h2:1'], isLearner: true }), status.INVALID_ARGUMENT, /^etcdserver: given member URLs are invalid/);
  const answer = await facade.add({ peerURLs: ['http://h2:1/'], isLearner: true });
  assert.deepEqual(added, [{ name: 'member-h2-1', peerUrl: 'http://h2:1', clientUrl: '' }]);
  assert.deepEqual(answer.member, { ID: '2', name: 'member-h2-1', peerURLs: ['http://h2:1'], clientURLs: [], isLearner: true });
  assert.deepEqual(answer.members.map((m) => [m.ID, m.clientURLs]), [['1', ['http://h1:3']], ['2', []]]);
  await rejectsWith(facade.update({ ID: '7', peerURLs: ['http://h9:1'] }), status.NOT_FOUND, /^etcdserver: member not found$/);
  await rejectsWith(facade.update({ ID: '2', peerURLs: ['http://h1:1'] }), status.FAILED_PRECONDITION, /^etcdserver: Peer URLs already exists$/);
  assert.equal((await facade.update({ ID: '2', peerURLs: ['http://h2:1'] })).members.length, 2);
});

function maintenance(overrides: Partial<MaintenanceAccess> = {}): MaintenanceFacade {
  const access: MaintenanceAccess = {
    memberId: 1,
    isLeader: () => true,
    transferLeadership: async () => {},
    hashKv: async (revision) => ({ hash: 7, revision, compactRevision: 3 }),
    alarms: new AlarmTable(),
    hashAll: () => 11,
    ...overrides,
  };
  return new MaintenanceFacade(access, headers());
}

test('MoveLeader: only the leader; a bad transferee and a transfer that took too long in etcd\'s words', async () => {
  await rejectsWith(maintenance({ isLeader: () => false }).moveLeader({ targetID: '2' }), status.FAILED_PRECONDITION, /^etcdserver: not leader$/);
  const bad = maintenance({ transferLeadership: async () => { throw new PreconditionFailedError('x', { reason: 'bad_transferee' }); } });
  await rejectsWith(bad.moveLeader({ targetID: '9' }), status.FAILED_PRECONDITION, /^etcdserver: bad leader transferee$/);
  const slow = maintenance({ transferLeadership: async () => { throw new UnavailableError('x', { reason: 'transfer_timeout' }); } });
  await rejectsWith(slow.moveLeader({ targetID: '2' }), status.UNAVAILABLE, /^etcdserver: request timed out, leader transfer took too long/);
  let moved = 0;
  assert.equal((await maintenance({ transferLeadership: async (to) => void (moved = to) }).moveLeader({ targetID: '3' })).header.member_id, 1);
  assert.equal(moved, 3);
  assert.deepEqual((await maintenance().hashKv({ revision: '5' })).compact_revision, 3);
  assert.equal(maintenance().hash().hash, 11);
});

test('alarms: activate, list by type, Status errors, deactivate', () => {
  const facade = maintenance();
  assert.deepEqual(facade.alarm({ action: 0 }).alarms, []);
  assert.deepEqual(facade.alarm({ action: 1, memberID: '0', alarm: 1 }).alarms, [{ memberID: '1', alarm: 1 }]);
  facade.alarm({ action: 1, memberID: '2', alarm: 2 });
  assert.equal(facade.alarm({ action: 0, alarm: 0 }).alarms.length, 2);
  assert.deepEqual(facade.alarm({ action: 0, alarm: 2 }).alarms, [{ memberID: '2', alarm: 2 }]);
  assert.deepEqual(facade.alarmErrors(), ['memberID:1 alarm:NOSPACE', 'memberID:2 alarm:CORRUPT']);
  assert.throws(() => facade.alarm({ action: 1, alarm: 0 }), /unknown alarm/);
  assert.deepEqual(facade.alarm({ action: 2, memberID: '2', alarm: 2 }).alarms, [{ memberID: '2', alarm: 2 }]);
  assert.deepEqual(facade.alarm({ action: 0 }).alarms, [{ memberID: '1', alarm: 1 }]);
});
