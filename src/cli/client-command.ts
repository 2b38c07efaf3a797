// What every client subcommand of `baton` shares: the common flags (--endpoints, -w), one
// BatonClient per run, output in the chosen format, and the mapping from outcomes to exit codes
// that scripts rely on (documented in exitCodeHelp, printed by every --help).
import { readFileSync } from 'node:fs';
import type { ClientTls } from '../client/tls-transport.js';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { BatonError, BatonClient, ClosedError, SessionLostError } from '../client/index.js';

export const exitCodes = {
  ok: 0,
  /** A definite no from the cell: precondition_failed, key_not_found, compacted, txn failure. */
  failed: 1,
  usage: 2,
  /** No definite answer: unavailable, timeout, overloaded (a mutation's outcome is unknown). */
  unavailable: 3,
} as const;

export const exitCodeHelp = `Exit codes:
  0  success
  1  definite failure answered by the cell (precondition_failed, key_not_found, lease_not_found,
     compacted, invalid_argument, a txn whose compare failed, a lost lease)
  2  usage error (bad flags or arguments; nothing was sent)
  3  no definite answer (unavailable, timeout, overloaded): a mutation may or may not have applied
  4  baton lock/elect: the session was lost while holding the lock or leadership`;

export const commonHelp = `Common flags:
  --endpoints URLS   comma-separated, default http://127.0.0.1:7001,:7002,:7003 (or BATON_ENDPOINTS)
  --no-discover      talk only to the given endpoints (do not learn the other members)
  --cacert FILE      a cell with TLS (https:// endpoints): the CA to trust (or BATON_CACERT)
  --cert FILE, --key FILE   the client certificate and key, where the cell requires one (BATON_CERT, BATON_KEY)
  -w, --write-out    simple (default) | json | table
  -h, --help         this help`;

export type OutputFormat = 'simple' | 'json' | 'table';

export class UsageError extends Error {
  override name = 'UsageError';
}

const commonOptions = {
  endpoints: { type: 'string' },
  'no-discover': { type: 'boolean', default: false },
  cacert: { type: 'string' },
  cert: { type: 'string' },
  key: { type: 'string' },
  'write-out': { type: 'string', short: 'w' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

export interface ParsedCommand<V> {
  readonly values: V;
  readonly positionals: string[];
  readonly format: OutputFormat;
  readonly endpoints: string[] | undefined;
  /** False with --no-discover: only the given endpoints are used. */
  readonly discover: boolean;
  readonly help: boolean;
}

/** Parses the command's own flags plus the common ones; throws UsageError on anything unknown. */
export function parseCommand<O extends NonNullable<ParseArgsConfig['options']>>(
  args: readonly string[],
  options: O,
) {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      options: { ...commonOptions, ...options },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const values = parsed.values as Record<string, unknown>;
  const format = (values['write-out'] ?? 'simple') as string;
  if (format !== 'simple' && format !== 'json' && format !== 'table') {
    throw new UsageError(`-w must be simple, json or table (not ${format})`);
  }
  parsedTls = tlsFiles(values);
  const flag = values['endpoints'] as string | undefined;
  const endpointText = flag ?? process.env['BATON_ENDPOINTS'];
  const endpoints = endpointText?.split(',').map((url) => url.trim()).filter((url) => url !== '');
  return {
    values: parsed.values,
    positionals: parsed.positionals,
    format: format as OutputFormat,
    endpoints,
    discover: values['no-discover'] !== true,
    help: values['help'] === true,
  };
}

/** The TLS files of the last parsed command (one command per process). */
let parsedTls: ClientTls | undefined;

/** --cacert/--cert/--key as parseCommand read them, for a command that builds its own client (baton canary). */
export function parsedClientTls(): ClientTls | undefined {
  return parsedTls;
}

/** --cacert/--cert/--key (or BATON_CACERT/BATON_CERT/BATON_KEY), read now: a missing file is a usage error. */
function tlsFiles(values: Record<string, unknown>): ClientTls | undefined {
  const path = (flag: 'cacert' | 'cert' | 'key'): string | undefined =>
    (values[flag] as string | undefined) ?? process.env[`BATON_${flag.toUpperCase()}`];
  const read = (flag: 'cacert' | 'cert' | 'key'): string | undefined => {
    const file = path(flag);
    if (file === undefined || file === '') return undefined;
    try {
      return readFileSync(file, 'utf8');
    } catch (error) {
      throw new UsageError(`--${flag} ${file}: ${(error as Error).message}`);
    }
  };
  const ca = read('cacert');
  const cert = read('cert');
  const key = read('key');
  if ((cert === undefined) !== (key === undefined)) throw new UsageError('--cert and --key go together');
  if (ca === undefined && cert === undefined) return undefined;
  return { ...(ca === undefined ? {} : { ca }), ...(cert === undefined ? {} : { cert }), ...(key === undefined ? {} : { key }) };
}

export function makeClient(endpoints: string[] | undefined, discover = true): BatonClient {
  // A CLI call should fail within seconds rather than retry for half a minute.
  const retry = { deadlineMs: 10_000, attemptsMax: 6 };
  return new BatonClient({ ...(endpoints === undefined ? {} : { endpoints }), retry, discover, ...(parsedTls === undefined ? {} : { tls: parsedTls }) });
}

/** Runs one command body with its client; maps every failure to a message and an exit code. */
export async function runWithClient(
  help: string,
  args: readonly string[],
  body: (args: readonly string[]) => Promise<number>,
): Promise<number> {
  // After "--" the words belong to a command run by baton (baton lock NAME -- CMD --help).
  const own = args.includes('--') ? args.slice(0, args.indexOf('--')) : args;
  if (own.includes('--help') || own.includes('-h')) {
    console.log(`${help}\n\n${commonHelp}\n\n${exitCodeHelp}`);
    return exitCodes.ok;
  }
  try {
    return await body(args);
  } catch (error) {
    return reportError(error, help, formatOf(args));
  }
}

export function reportError(error: unknown, help: string, format: OutputFormat): number {
  if (error instanceof UsageError) {
    console.error(`baton: ${error.message}\n\n${help}`);
    return exitCodes.usage;
  }
  const coded = error instanceof SessionLostError || error instanceof ClosedError;
  if (error instanceof BatonError || coded) {
    const details = error instanceof BatonError ? error.details : {};
    const wire = { error: { code: error.code, message: error.message, ...details } };
    if (format === 'json') console.error(JSON.stringify(wire));
    else console.error(`baton: ${error.code}: ${error.message}${describeDetails(details)}`);
    if (error instanceof BatonError && error.retryable) return exitCodes.unavailable;
    return exitCodes.failed;
  }
  console.error(`baton: ${error instanceof Error ? error.message : String(error)}`);
  return exitCodes.failed;
}

/** The -w value, found without a full parse (a usage error must still be reported in it). */
function formatOf(args: readonly string[]): OutputFormat {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const flagged = arg === '-w' || arg === '--write-out';
    const value = flagged ? args[i + 1] : /^(?:--write-out=|-w=?)(.+)$/.exec(arg)?.[1];
    if (value === 'json' || value === 'table') return value;
  }
  return 'simple';
}

function describeDetails(details: Readonly<Record<string, unknown>>): string {
  const shown = Object.entries(details).filter(([name]) => name !== 'endpoint');
  const parts = shown.map(([name, value]) => `${name}: ${JSON.stringify(value)}`);
  return parts.length === 0 ? '' : ` (${parts.join(', ')})`;
}

/** Prints rows as an aligned table with a header line. */
export function printTable(header: readonly string[], rows: readonly (readonly unknown[])[]): void {
  const cells = [header, ...rows.map((row) => row.map((cell) => String(cell)))];
  const width = (column: number): number =>
    Math.max(...cells.map((row) => (row[column] ?? '').length));
  const widths = header.map((_, column) => width(column));
  const pad = (row: readonly string[]): string[] =>
    row.map((cell, i) => cell.padEnd(widths[i] ?? 0));
  const line = (row: readonly string[]): string => `| ${pad(row).join(' | ')} |`;
  const rule = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+`;
  console.log([rule, line(header), rule, ...cells.slice(1).map(line), rule].join('\n'));
}

export function printJson(value: unknown): void {
  console.log(JSON.stringify(value));
}

/** A non-negative integer flag, or a UsageError naming it. */
export function integerFlag(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 0) {
    throw new UsageError(`--${name} must be a non-negative integer (not ${value})`);
  }
  return number;
}

export function requirePositionals(
  positionals: readonly string[],
  min: number,
  max: number,
  what: string,
): void {
  if (positionals.length < min || positionals.length > max) {
    throw new UsageError(`expected ${what}`);
  }
}
