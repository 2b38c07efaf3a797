// Global flags before the command (etcdctl, kubectl): they move behind the command name, ahead of
// its own arguments, so `baton --endpoints URL get K` parses as `baton get --endpoints URL K` and a
// later `--` still ends baton's flags where the user put it. Anything else before the command is
// a usage error, never a guess.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { splitGlobalFlags } from '../../../src/cli/global-flags.js';

test('global flags before the command go to the command', () => {
  assert.deepEqual(splitGlobalFlags(['--endpoints', 'http://h:1', 'get', '/k']),
    { type: 'command', name: 'get', args: ['--endpoints', 'http://h:1', '/k'] });
  assert.deepEqual(splitGlobalFlags(['-w', 'json', '--cacert', 'ca.pem', '--cert', 'c.pem', '--key', 'k.pem', '--no-discover', 'status']),
    { type: 'command', name: 'status', args: ['-w', 'json', '--cacert', 'ca.pem', '--cert', 'c.pem', '--key', 'k.pem', '--no-discover'] });
  assert.deepEqual(splitGlobalFlags(['--endpoints=http://h:1', '-wjson', 'lock', 'L', '--', 'cmd', '--endpoints']),
    { type: 'command', name: 'lock', args: ['--endpoints=http://h:1', '-wjson', 'L', '--', 'cmd', '--endpoints'] });
});

test('flags after the command are the command\'s own business', () => {
  assert.deepEqual(splitGlobalFlags(['get', '/k', '--endpoints', 'http://h:1', '--bogus']),
    { type: 'command', name: 'get', args: ['/k', '--endpoints', 'http://h:1', '--bogus'] });
  assert.deepEqual(splitGlobalFlags(['dev', '--cells', '2']), { type: 'command', name: 'dev', args: ['--cells', '2'] });
});

test('help, version, and what is refused before the command', () => {
  assert.deepEqual(splitGlobalFlags(['--help']), { type: 'help' });
  assert.deepEqual(splitGlobalFlags(['-h', 'get']), { type: 'help' });
  assert.deepEqual(splitGlobalFlags(['--endpoints', 'x', '--version']), { type: 'version' });
  assert.equal(splitGlobalFlags([]).type, 'usage');
  assert.equal(splitGlobalFlags(['--endpoints']).type, 'usage');
  assert.equal(splitGlobalFlags(['--endpoints', '--no-discover', 'get']).type, 'usage', 'a flag is no value');
  assert.equal(splitGlobalFlags(['--prefix', 'get', '/k']).type, 'usage', 'a command flag before the command');
  assert.equal(splitGlobalFlags(['--cells', '2', 'dev']).type, 'usage');
});
