#!/usr/bin/env node
// The `baton` command: a small dispatcher; each subcommand lives in its own file.
import { runDev } from '../server/dev.js';
import { runServer } from '../server/server-command.js';
import { benchCommand } from './bench-command.js';
import { devCommand } from './dev-command.js';
import { simCommand } from './sim-command.js';

type Command = (args: readonly string[]) => number | Promise<number>;

const commands: Record<string, Command> = {
  server: runServer,
  dev: runDev,
  sim: simCommand,
  bench: benchCommand,
  'sim-demo': () => devCommand(),
};

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  const command = name === undefined ? undefined : commands[name];
  if (command === undefined) {
    console.error(`usage: baton <${Object.keys(commands).join('|')}> [options]   (--help on each)`);
    return 2;
  }
  return command(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
