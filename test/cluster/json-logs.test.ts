// `--log-format json` on real processes: every line a node writes (stdout and stderr) is one JSON
// object naming its cell and member, with the events of the text format (a leader was elected);
// with --log-slow-request-ms 0 every HTTP request is a line with its Request-ID, method, route,
// status and time, and never its key or value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, sleep, startTestCell } from './harness.js';

test('--log-format json: every line of every node is a JSON object with time, level, cell and member', { timeout: 90_000 }, async () => {
  const cell = await startTestCell({ extraArgs: ['--log-format', 'json', '--log-slow-request-ms', '0'] });
  try {
    await findLeader(cell);
    const put = await http(`${cell.cell.clientUrl('n1')}/v1/kv/secret-key-name`, { method: 'PUT', body: 'secret-value', headers: { 'request-id': 'req-logged-1' } });
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
    }
  } finally {
    await cell.close();
  }
});
