// `--log-format json` on real processes: every line a node writes (stdout and stderr) is one JSON
// object naming its cell and member, with the events of the text format (a leader was elected);
// with --log-slow-request-ms 0 every HTTP request is a line with its Request-ID, method, route,
// status and time, and never its key or value, nor a user's password or token (authentication
// through the gateway and the native API, a token used and a forged one refused).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, sleep, startTestCell } from './harness.js';

test('--log-format json: every line of every node is a JSON object with time, level, cell and member', { timeout: 90_000 }, async () => {
  const cell = await startTestCell({ grpc: true, extraArgs: ['--log-format', 'json', '--log-slow-request-ms', '0'] });
  try {
    await findLeader(cell);
    // A user's password and token pass through every member's logging (each request is a line).
    const gateway = (path: string, body: unknown): Promise<{ status: number; body: any }> =>
      http(`http://${cell.cell.grpcEndpoint('n1')}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    for (const [path, body] of [['/v3/auth/user/add', { name: 'root', password: 'secret-password-1' }], ['/v3/auth/role/add', { name: 'root' }],
      ['/v3/auth/user/grant', { user: 'root', role: 'root' }], ['/v3/auth/enable', {}]] as const) {
      const answer = await gateway(path, body);
      assert.equal(answer.status, 200, `${path}: ${JSON.stringify(answer.body)}`);
    }
    const authenticated = await http(`${cell.cell.clientUrl('n2')}/v1/auth/authenticate`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'root', password: 'secret-password-1' }),
    });
    assert.equal(authenticated.status, 200, JSON.stringify(authenticated.body));
    const token = authenticated.body.token as string;
    const withToken = await http(`${cell.cell.clientUrl('n3')}/v1/kv/with-token`, { method: 'PUT', body: 'x', headers: { authorization: `Bearer ${token}` } });
    assert.equal(withToken.status, 201, JSON.stringify(withToken.body));
    const badToken = await http(`${cell.cell.clientUrl('n3')}/v1/kv/with-token`, { method: 'PUT', body: 'x', headers: { authorization: `Bearer ${token}x` } });
    assert.equal(badToken.status, 401);
    const put = await http(`${cell.cell.clientUrl('n1')}/v1/kv/secret-key-name`, { method: 'PUT', body: 'secret-value', headers: { 'request-id': 'req-logged-1', authorization: `Bearer ${token}` } });
    assert.equal(put.status, 201);
    // The line is written once the answer has left, and reaches this process through a pipe.
    const logged = (): string[] => (cell.cell.logs.get('n1') ?? []).join('').split('\n').filter((line) => line.includes('"requestId":"req-logged-1"'));
    for (let i = 0; i < 40 && logged().length === 0; i++) await sleep(50);
    const slow = logged();
    assert.equal(slow.length, 1, 'the request is one line with its Request-ID');
    const entry = JSON.parse(slow[0] as string) as Record<string, unknown>;
    assert.deepEqual([entry['method'], entry['route'], entry['status'], typeof entry['ms']], ['PUT', '/v1/kv', 201, 'number']);
    for (const name of cell.names) {
      const lines = (cell.cell.logs.get(name) ?? []).join('').split('\n').filter((line) => line !== '');
      assert.ok(lines.length > 0, `${name} logged`);
      for (const line of lines) {
        const entry = JSON.parse(line) as Record<string, unknown>;
        assert.equal(entry['member'], name, line);
        assert.equal(typeof entry['cell'], 'string', line);
        assert.ok(['debug', 'info', 'warn', 'error'].includes(entry['level'] as string), line);
        assert.ok(!Number.isNaN(Date.parse(entry['time'] as string)), line);
      }
      assert.ok(lines.some((line) => /leader is now member/.test(line)), `${name} logged the election`);
      assert.ok(!lines.some((line) => line.includes('secret-value') || line.includes('secret-key-name')), 'no value or key is logged');
      assert.ok(!lines.some((line) => line.includes('secret-password-1') || line.includes(token.split('.').at(-1) as string)), 'no password or token is logged');
    }
  } finally {
    await cell.close();
  }
});
