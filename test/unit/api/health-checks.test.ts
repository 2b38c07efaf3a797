// /livez and /readyz as etcd answers them (src/api/health.ts), over a source whose every part
// can be made to fail: the check lines and the final `ok` with ?verbose, a failure always
// detailed and 503, ?exclude dropping a check (an unknown name ignored), a sub path running one
// check, the linearizable read bounded in time, a learner and a CORRUPT alarm not ready.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AlarmTable, alarmType } from '../../../src/api/alarms.js';
import { healthChecks, healthTarget, runHealth, type HealthSource } from '../../../src/api/health.js';

function source(overrides: Partial<HealthSource> = {}): HealthSource {
  return {
    serializableRead: async () => undefined,
    linearizableRead: async () => undefined,
    linearizableReadMs: 50,
    isLearner: () => false,
    alarms: new AlarmTable(),
    ...overrides,
  };
}

const plain = { exclude: new Set<string>(), verbose: false };
const verbose = { exclude: new Set<string>(), verbose: true };

test('a healthy member: `ok`, and with ?verbose every check in order first', async () => {
  const checks = healthChecks(source());
  const readyz = { kind: 'readyz', check: null } as const;
  assert.deepEqual(await runHealth(checks, readyz, plain), { status: 200, body: 'ok\n' });
  assert.deepEqual(await runHealth(checks, readyz, verbose), {
    status: 200,
    body: '[+]data_corruption ok\n[+]serializable_read ok\n[+]linearizable_read ok\n[+]non_learner ok\nok\n',
  });
  assert.deepEqual(await runHealth(checks, { kind: 'livez', check: null }, verbose),
    { status: 200, body: '[+]serializable_read ok\nok\n' });
});

test('a failure is 503 with every line, verbose or not; ?exclude leaves the check out', async () => {
  const checks = healthChecks(source({ linearizableRead: () => Promise.reject(new Error('no leader')) }));
  const readyz = { kind: 'readyz', check: null } as const;
  const failed = {
    status: 503,
    body: '[+]data_corruption ok\n[+]serializable_read ok\n[-]linearizable_read failed: no leader\n[+]non_learner ok\n\n',
  };
  assert.deepEqual(await runHealth(checks, readyz, plain), failed);
  assert.deepEqual(await runHealth(checks, readyz, verbose), failed);
  const excluded = await runHealth(checks, readyz, { exclude: new Set(['linearizable_read', 'no_such_check']), verbose: true });
  assert.deepEqual(excluded, { status: 200, body: '[+]data_corruption ok\n[+]serializable_read ok\n[+]non_learner ok\nok\n' });
  // /livez checks nothing of the cell: a member without a leader is alive.
  assert.deepEqual(await runHealth(checks, { kind: 'livez', check: null }, plain), { status: 200, body: 'ok\n' });
});

test('a sub path runs its one check; unknown sub paths are not health paths', async () => {
  const checks = healthChecks(source({ isLearner: () => true }));
  const target = healthTarget(checks, '/readyz/non_learner');
  assert.deepEqual(target, { kind: 'readyz', check: 'non_learner' });
  assert.deepEqual(await runHealth(checks, target ?? assert.fail(), verbose),
    { status: 503, body: '[-]non_learner failed: not supported for learner\n\n' });
  assert.deepEqual(await runHealth(checks, healthTarget(checks, '/readyz/serializable_read') ?? assert.fail(), plain),
    { status: 200, body: 'ok\n' });
  assert.equal(healthTarget(checks, '/readyz/nothing'), null);
  assert.equal(healthTarget(checks, '/livez/linearizable_read'), null);
  assert.equal(healthTarget(checks, '/readyzx'), null);
});

test('the linearizable read is bounded; a CORRUPT alarm (not NOSPACE) fails data_corruption', async () => {
  const alarms = new AlarmTable();
  const checks = healthChecks(source({ linearizableRead: () => new Promise(() => undefined), alarms }));
  const started = Date.now();
  const slow = await runHealth(checks, { kind: 'readyz', check: 'linearizable_read' }, plain);
  assert.equal(slow.status, 503);
  assert.match(slow.body, /^\[-\]linearizable_read failed: a linearizable read did not complete within 50 ms\n\n$/);
  assert.ok(Date.now() - started < 2_000, 'answered at the bound');
  alarms.activate('7', alarmType.nospace);
  const corruption = { kind: 'readyz', check: 'data_corruption' } as const;
  assert.equal((await runHealth(checks, corruption, plain)).status, 200);
  alarms.activate('7', alarmType.corrupt);
  assert.deepEqual(await runHealth(checks, corruption, plain),
    { status: 503, body: '[-]data_corruption failed: alarm activated: CORRUPT\n\n' });
});
