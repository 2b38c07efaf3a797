#!/usr/bin/env node
// The `baton` command: a small dispatcher; each subcommand lives in its own file.
// Commands load lazily: `baton sim` should not pay for LMDB and the server at start-up.
type Command = (args: readonly string[]) => number | Promise<number>;

const commands: Record<string, Command> = {
  server: async (args) => (await import('../node/server-command.js')).runServer(args),
  dev: async (args) => (await import('../node/dev.js')).runDev(args),
  sim: async (args) => (await import('./sim-command.js')).simCommand(args),
  bench: async (args) => (await import('./bench-command.js')).benchCommand(args),
  'sim-demo': async (args) => (await import('./dev-command.js')).devCommand(args),
  get: async (args) => (await import('./kv-commands.js')).getCommand(args),
  put: async (args) => (await import('./kv-commands.js')).putCommand(args),
  del: async (args) => (await import('./kv-commands.js')).delCommand(args),
  txn: async (args) => (await import('./kv-commands.js')).txnCommand(args),
  watch: async (args) => (await import('./watch-command.js')).watchCommand(args),
  lease: async (args) => (await import('./lease-command.js')).leaseCommand(args),
  member: async (args) => (await import('./member-command.js')).memberCommand(args),
  status: async (args) => (await import('./cluster-commands.js')).statusCommand(args),
  compact: async (args) => (await import('./cluster-commands.js')).compactCommand(args),
  snapshot: async (args) => (await import('./snapshot-command.js')).snapshotCommand(args),
  lock: async (args) => (await import('./lock-command.js')).lockCommand(args),
  elect: async (args) => (await import('./elect-command.js')).electCommand(args),
};

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  const usage = `usage: baton <${Object.keys(commands).join('|')}> [options]   (--help on each)`;
  if (name === '--help' || name === '-h' || name === 'help') {
    console.log(usage);
    return 0;
  }
  const command = name === undefined ? undefined : commands[name];
  if (command === undefined) {
    console.error(usage);
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
