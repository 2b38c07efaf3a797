// The node's log lines (src/node/node-log.ts): JSON lines carry time, level, cell and member; the
// text format is the `[name] message` of `baton dev`; the level filters; --log-format is checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createNodeLogger } from '../../../src/node/node-log.js';
import { ConfigError, parseNodeConfig } from '../../../src/node/config.js';

function capture(format: 'text' | 'json', level: 'info' | 'warn' = 'info'): { out: string[]; err: string[]; log: ReturnType<typeof createNodeLogger> } {
  const out: string[] = [];
  const err: string[] = [];
  const log = createNodeLogger({ format, level, cell: 'c1', member: 'n2', out: (l) => out.push(l), err: (l) => err.push(l), now: () => new Date(0) });
  return { out, err, log };
}

test('json: one object per line with time, level, cell, member and the message', () => {
  const { out, err, log } = capture('json');
  log.info('leader is now member 1 (this node: follower)');
  log.warn('a "quoted"\nline');
  log.error('boom');
  assert.deepEqual(out.map((l) => JSON.parse(l)), [{ time: '1970-01-01T00:00:00.000Z', level: 'info', cell: 'c1', member: 'n2', msg: 'leader is now member 1 (this node: follower)' }]);
  assert.deepEqual(err.map((l) => JSON.parse(l).level), ['warn', 'error']);
  assert.equal(JSON.parse(err[0] as string).msg, 'a "quoted"\nline');
  assert.ok([...out, ...err].every((l) => l.endsWith('\n') && l.indexOf('\n') === l.length - 1), 'one line each');
});

test('text: the [name] lines of baton dev, and the level filters', () => {
  const { out, err, log } = capture('text', 'warn');
  log.info('hidden');
  log.warn('careful');
  log.error('broken');
  assert.deepEqual(out, []);
  assert.deepEqual(err, ['[n2] WARN careful\n', '[n2] ERROR broken\n']);
});

test('--log-format takes text or json', () => {
  const base = ['--name', 'n1', '--data-dir', '/tmp/x', '--listen-client', 'http://127.0.0.1:7001',
    '--listen-peer', 'http://127.0.0.1:7101', '--initial-cluster', 'n1=http://127.0.0.1:7101,n2=http://127.0.0.1:7102'];
  assert.equal(parseNodeConfig(base, {}).logFormat, 'text');
  assert.equal(parseNodeConfig([...base, '--log-format', 'json'], {}).logFormat, 'json');
  assert.equal(parseNodeConfig(base, { BATON_LOG_FORMAT: 'json' }).logFormat, 'json');
  assert.throws(() => parseNodeConfig([...base, '--log-format', 'xml'], {}), (e: Error) => e instanceof ConfigError && /--log-format/.test(e.message));
});
