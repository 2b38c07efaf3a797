#!/usr/bin/env node
// The `baton` command: a small dispatcher; each subcommand lives in its own file.
// Commands load lazily: `baton sim` should not pay for LMDB and the server at start-up.
// Global flags may come before the command (global-flags.ts); a flag a command does not know is a
// usage error (exit 2) with that command's usage, never a stack trace.
import { readFileSync } from 'node:fs';
import { commandTable, usageText } from './command-table.js';
import { splitGlobalFlags } from './global-flags.js';

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
  completion: async (args) => (await import('./completion.js')).completionCommand(args),
  router: async (args) => (await import('./router-command.js')).routerCommand(args),
  cells: async (args) => (await import('./cells-commands.js')).cellsCommand(args),
  ns: async (args) => (await import('./cells-commands.js')).nsCommand(args),
  tenant: async (args) => (await import('./tenant-command.js')).tenantCommand(args),
  audit: async (args) => (await import('./audit-command.js')).auditCommand(args),
  certs: async (args) => (await import('./certs-command.js')).certsCommand(args),
  keys: async (args) => (await import('./keys-command.js')).keysCommand(args),
  canary: async (args) => (await import('./canary-command.js')).canaryCommand(args),
  version: (args) => {
    if (args.length > 0 && !args.includes('--help')) return usageError('version', `unexpected ${args[0]}`);
    console.log(packageVersion());
    return 0;
  },
};

// The help, the completion scripts and the dispatch must name the same commands.
const tableNames = commandTable.map((row) => row.name).sort().join(' ');
if (Object.keys(commands).sort().join(' ') !== tableNames) {
  throw new Error(`main.ts and command-table.ts disagree on the commands: ${tableNames}`);
}

/** The package's version, from the package.json beside dist/ (in a checkout and installed alike). */
function packageVersion(): string {
  const text = readFileSync(new URL('../../../package.json', import.meta.url), 'utf8');
  return String((JSON.parse(text) as { version?: unknown }).version);
}

function usageError(name: string, message: string): number {
  console.error(`baton ${name}: ${message}\n(baton ${name} --help lists its flags)`);
  return 2;
}

/** node:util parseArgs' own errors (unknown option, missing value) reaching here are usage errors. */
function isParseArgsError(error: unknown): error is Error {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}

async function main(argv: readonly string[]): Promise<number> {
  const split = splitGlobalFlags(argv);
  if (split.type === 'help') {
    console.log(usageText());
    return 0;
  }
  if (split.type === 'version') {
    console.log(packageVersion());
    return 0;
  }
  if (split.type === 'usage') {
    console.error(`baton: ${split.message}\n\n${usageText()}`);
    return 2;
  }
  const command = commands[split.name];
  if (command === undefined) {
    console.error(`baton: unknown command "${split.name}"\n\n${usageText()}`);
    return 2;
  }
  try {
    return await command(split.args);
  } catch (error) {
    if (isParseArgsError(error)) return usageError(split.name, error.message);
    throw error;
  }
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
