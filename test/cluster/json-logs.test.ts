// `--log-format json` on real processes: every line a node writes (stdout and stderr) is one JSON
// object naming its cell and member, with the events of the text format (a leader was elected).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findLeader, http, startTestCell } from './harness.js';

test('--log-format json: every line of every node is a JSON object with time, level, cell and member', { timeout: 90_000 }, async () => {
  const cell = await startTestCell({ extraArgs: ['--log-format', 'json'] });
  try {
    await findLeader(cell);
    await http(`${cell.cell.clientUrl('n1')}/v1/kv/logged`, { method: 'PUT', body: 'secret-value' });
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
      assert.ok(!lines.some((line) => line.includes('secret-value')), 'no value is logged');
    }
  } finally {
    await cell.close();
  }
});
