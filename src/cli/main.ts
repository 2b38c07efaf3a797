#!/usr/bin/env node
// The `baton` command: a small dispatcher; each subcommand lives in its own file.
import { devCommand } from './dev-command.js';
import { simCommand } from './sim-command.js';

const commands: Record<string, (args: readonly string[]) => number> = {
  sim: simCommand,
  dev: () => devCommand(),
};

function main(argv: readonly string[]): number {
  const [name, ...rest] = argv;
  const command = name === undefined ? undefined : commands[name];
  if (command === undefined) {
    console.error(`usage: baton <${Object.keys(commands).join('|')}> [options]`);
    return 2;
  }
  return command(rest);
}

process.exitCode = main(process.argv.slice(2));
