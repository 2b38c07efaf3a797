// The `baton` command line as a user meets it, on the built CLI in its own process (no cell):
// every command's unknown flag is a usage error (exit 2, the command's usage, no stack trace),
// `--version` prints the package's version, and `baton completion bash|zsh` prints scripts that
// parse and that offer every command and, per command, exactly the flags its --help documents.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { baton, cliPath } from './cli-run.js';
import { commandTable } from '../../src/cli/command-table.js';
import { flagsOf } from '../../src/cli/completion.js';

const packageJson = JSON.parse(readFileSync(join(cliPath, '..', '..', '..', '..', 'package.json'), 'utf8')) as { version: string };

test('an unknown flag is a usage error with the command\'s usage, for every command', async () => {
  for (const row of commandTable) {
    const result = await baton([row.name, '--no-such-flag']);
    assert.equal(result.code, 2, `baton ${row.name} --no-such-flag: exit ${result.code}\n${result.stderr}`);
    assert.doesNotMatch(result.stderr, /ERR_PARSE_ARGS|\n\s+at /, `baton ${row.name}: a raw Node error\n${result.stderr}`);
    assert.match(result.stderr, /usage|--help/, `baton ${row.name}: no usage\n${result.stderr}`);
  }
  // --cells is checked before anything starts (0 is not a cell count).
  const dev = await baton(['dev', '--cells', '0']);
  assert.equal(dev.code, 2);
  assert.match(dev.stderr, /--cells takes 1\.\.8[\s\S]*usage: baton dev --cells N/);
});

test('--version and version print the package version', async () => {
  for (const args of [['--version'], ['version']]) {
    const result = await baton(args);
    assert.equal(result.code, 0);
    assert.equal(result.stdout.trim(), packageJson.version);
  }
});

test('global flags work before the command', async () => {
  // Port 1 answers nobody: a definite "no answer" (exit 3) shows the flag reached `get`.
  const before = await baton(['--endpoints', 'http://127.0.0.1:1', '--no-discover', 'get', '/k'], 60_000);
  assert.equal(before.code, 3, before.stderr);
  assert.match(before.stderr, /127\.0\.0\.1:1/);
  const unknown = await baton(['--prefix', 'get', '/k']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown flag --prefix before the command/);
});

/** Every --flag a command's --help names (before the common flags' block). */
function documentedFlags(name: string): string[] {
  const help = execFileSync(process.execPath, [cliPath, name, '--help'], { encoding: 'utf8' });
  const own = help.split('\nCommon flags:')[0] as string;
  return [...new Set(own.match(/--[a-z][a-z0-9-]*/g) ?? [])];
}

test('completion: bash and zsh scripts parse and offer the commands and their flags', () => {
  const bash = execFileSync(process.execPath, [cliPath, 'completion', 'bash'], { encoding: 'utf8' });
  assert.equal(spawnSync('bash', ['-n'], { input: bash }).status, 0, 'bash -n');
  for (const row of commandTable) assert.ok(bash.includes(`    ${row.name}) flags="`), `bash offers ${row.name}`);
  const complete = (words: string[]): string => spawnSync('bash', ['-c',
    `source /dev/stdin <<'EOS'\n${bash}\nEOS\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _baton; echo "\${COMPREPLY[*]}"`],
  { encoding: 'utf8' }).stdout.trim();
  assert.equal(complete(['baton', '--endpoints', 'http://x', 'le']), 'lease');
  assert.equal(complete(['baton', 'lease', '']), 'grant keepalive revoke timetolive list');
  assert.equal(complete(['baton', 'get', '--keys']), '--keys-only');
  assert.equal(complete(['baton', 'get', '-w', '']), 'simple json table');
  const zsh = execFileSync(process.execPath, [cliPath, 'completion', 'zsh'], { encoding: 'utf8' });
  const zshCheck = spawnSync('zsh', ['-n'], { input: zsh });
  if (zshCheck.error === undefined) assert.equal(zshCheck.status, 0, `zsh -n: ${zshCheck.stderr}`);
  else console.log('# zsh is not installed: the zsh script is not syntax-checked');
  for (const row of commandTable) assert.ok(zsh.includes(`'${row.name}:`), `zsh offers ${row.name}`);
});

test('completion offers exactly the flags each command documents', () => {
  for (const row of commandTable) {
    if (row.name === 'completion' || row.name === 'version') continue;
    const offered = new Set(flagsOf(row));
    const documented = documentedFlags(row.name);
    for (const flag of documented) assert.ok(offered.has(flag), `baton ${row.name} --help names ${flag}; completion misses it`);
    // The server's help is a summary; its flags come from the config parser itself.
    if (row.name === 'server') continue;
    for (const flag of row.flags) assert.ok(documented.includes(flag), `completion offers ${flag} for ${row.name}, its --help does not name it`);
  }
});
