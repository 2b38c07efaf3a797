// `baton get|put|del|txn`: the key-value commands. Values are UTF-8 text on the command line;
// `put` reads the value from stdin when it is omitted (binary-safe: bytes are sent as read).
import { readFileSync } from 'node:fs';
import type { KeyValue, RangeResult, TxnRequest } from '../client/index.js';
import {
  exitCodes,
  integerFlag,
  makeClient,
  parseCommand,
  printJson,
  printTable,
  requirePositionals,
  runWithClient,
  UsageError,
  type OutputFormat,
} from './client-command.js';

const getHelp = `usage: baton get KEY [--prefix] [--limit N] [--rev R] [--keys-only] [--count-only]
                 [--serializable]
  Reads a key (or, with --prefix, every key beginning with KEY). An absent single key exits 1.`;
const putHelp = `usage: baton put KEY [VALUE] [--if-version N] [--if-revision R] [--lease ID]
                 [--request-id ID]
  Writes KEY (VALUE, or stdin when omitted). --if-version 0 creates only if absent.
  Retries after no answer reuse one Request-ID, so the write applies at most once.
  Prints the revision and the key's fencing token.`;
const delHelp = `usage: baton del KEY [--prefix] [--if-version N] [--if-revision R]
                 [--request-id ID] [--all-keys]
  Deletes a key (or every key under a prefix). Prints how many were deleted.
  Deleting prefix "/" (every key of the cell, locks included) also needs --all-keys.`;
const txnHelp = `usage: baton txn [FILE|-] [--request-id ID]
  Runs one transaction read as JSON from FILE or stdin ("-" or omitted), as POST /v1/txn:
  {"compare": [{"key": "/a", "target": "version", "op": "==", "value": 0}],
   "success": [{"put": {"key": "/a", "value": "x"}}], "failure": [{"get": {"key": "/a"}}]}
  Exits 0 when the success branch ran and 1 when the failure branch ran.`;

export const getCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(getHelp, args, async () => {
    const { values, positionals, format, endpoints, discover } = parseCommand(args, {
      prefix: { type: 'boolean' },
      limit: { type: 'string' },
      rev: { type: 'string' },
      'keys-only': { type: 'boolean' },
      'count-only': { type: 'boolean' },
      serializable: { type: 'boolean' },
    });
    requirePositionals(positionals, 1, 1, 'one KEY');
    const client = makeClient(endpoints, discover);
    try {
      const limit = integerFlag(values.limit, 'limit');
      const revision = integerFlag(values.rev, 'rev');
      const result = await client.get(positionals[0] as string, {
        ...(values.prefix === true ? { prefix: true } : {}),
        ...(limit !== undefined ? { limit } : {}),
        ...(revision !== undefined ? { revision } : {}),
        ...(values['keys-only'] === true ? { keysOnly: true } : {}),
        ...(values['count-only'] === true ? { countOnly: true } : {}),
        ...(values.serializable === true ? { consistency: 'serializable' as const } : {}),
      });
      printRange(result, format, values['keys-only'] === true, values['count-only'] === true);
      return exitCodes.ok;
    } finally {
      await client.close();
    }
  });

function printRange(
  result: RangeResult,
  format: OutputFormat,
  keysOnly: boolean,
  countOnly: boolean,
): void {
  if (format === 'json') return printJson(result);
  if (format === 'table') {
    return printTable(
      ['KEY', 'VALUE', 'VERSION', 'CREATE_REV', 'MOD_REV', 'LEASE'],
      result.kvs.map((kv: KeyValue) => [
        kv.key,
        kv.value,
        kv.version,
        kv.createRevision,
        kv.modRevision,
        kv.lease,
      ]),
    );
  }
  if (countOnly) return console.log(String(result.count));
  for (const kv of result.kvs) console.log(keysOnly ? kv.key : `${kv.key}\n${kv.value}`);
}

export const putCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(putHelp, args, async () => {
    const { values, positionals, format, endpoints, discover } = parseCommand(args, {
      'if-version': { type: 'string' },
      'if-revision': { type: 'string' },
      lease: { type: 'string' },
      'request-id': { type: 'string' },
    });
    requirePositionals(positionals, 1, 2, 'KEY [VALUE]');
    const ifVersion = integerFlag(values['if-version'], 'if-version');
    const ifRevision = integerFlag(values['if-revision'], 'if-revision');
    const lease = integerFlag(values.lease, 'lease');
    const value = positionals[1] ?? readFileSync(0);
    const client = makeClient(endpoints, discover);
    try {
      const result = await client.put(positionals[0] as string, value, {
        ...(ifVersion !== undefined ? { ifVersion } : {}),
        ...(ifRevision !== undefined ? { ifRevision } : {}),
        ...(lease !== undefined ? { lease } : {}),
        ...(values['request-id'] !== undefined ? { requestId: values['request-id'] } : {}),
      });
      if (format === 'json') printJson(result);
      else if (format === 'table') {
        const row = [result.revision, result.version, result.created, result.fencingToken];
        printTable(['REVISION', 'VERSION', 'CREATED', 'FENCING_TOKEN'], [row]);
      } else {
        const { revision, version, fencingToken } = result;
        console.log(`OK revision=${revision} version=${version} fencingToken=${fencingToken}`);
      }
      return exitCodes.ok;
    } finally {
      await client.close();
    }
  });

export const delCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(delHelp, args, async () => {
    const { values, positionals, format, endpoints, discover } = parseCommand(args, {
      prefix: { type: 'boolean' },
      'all-keys': { type: 'boolean' },
      'if-version': { type: 'string' },
      'if-revision': { type: 'string' },
      'request-id': { type: 'string' },
    });
    requirePositionals(positionals, 1, 1, 'one KEY');
    const ifVersion = integerFlag(values['if-version'], 'if-version');
    const ifRevision = integerFlag(values['if-revision'], 'if-revision');
    const client = makeClient(endpoints, discover);
    try {
      const result = await client.delete(positionals[0] as string, {
        ...(values.prefix === true ? { prefix: true } : {}),
        ...(values['all-keys'] === true ? { confirmDeleteAll: true } : {}),
        ...(ifVersion !== undefined ? { ifVersion } : {}),
        ...(ifRevision !== undefined ? { ifRevision } : {}),
        ...(values['request-id'] !== undefined ? { requestId: values['request-id'] } : {}),
      });
      if (format === 'json') printJson(result);
      else if (format === 'table') {
        printTable(['DELETED', 'REVISION'], [[result.deleted, result.revision]]);
      }
      else console.log(String(result.deleted));
      return exitCodes.ok;
    } finally {
      await client.close();
    }
  });

export const txnCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(txnHelp, args, async () => {
    const options = { 'request-id': { type: 'string' } } as const;
    const { values, positionals, format, endpoints, discover } = parseCommand(args, options);
    requirePositionals(positionals, 0, 1, '[FILE|-]');
    const source = positionals[0] ?? '-';
    let request: TxnRequest;
    try {
      request = JSON.parse(readFileSync(source === '-' ? 0 : source, 'utf8')) as TxnRequest;
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new UsageError(`cannot read the transaction from ${source}: ${why}`);
    }
    const client = makeClient(endpoints, discover);
    try {
      const result = await client.txn(
        {
          compare: request.compare ?? [],
          success: request.success ?? [],
          failure: request.failure ?? [],
        },
        values['request-id'] !== undefined ? { requestId: values['request-id'] } : {},
      );
      if (format === 'json') printJson(result);
      else if (format === 'table') {
        const row = [result.succeeded, result.revision, JSON.stringify(result.results)];
        printTable(['SUCCEEDED', 'REVISION', 'RESULTS'], [row]);
      } else {
        console.log(`${result.succeeded ? 'SUCCESS' : 'FAILURE'} revision=${result.revision}`);
        for (const opResult of result.results) console.log(JSON.stringify(opResult));
      }
      return result.succeeded ? exitCodes.ok : exitCodes.failed;
    } finally {
      await client.close();
    }
  });
