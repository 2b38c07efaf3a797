// `baton tenant create|set|show|list|delete`: tenants, their prefixes and quotas through
// /v1/tenants (docs/api/tenants.md, issue #28). create refuses an existing name, set an unknown
// one; both send the whole record, with limits not given kept (set) or unlimited (create).
import { call } from './cells-commands.js';
import { exitCodes, parseCommand, printJson, printTable, requirePositionals, runWithClient, UsageError } from './client-command.js';

const tenantHelp = `usage: baton tenant create NAME --prefix P [--prefix P2] [--max-keys N] [--max-bytes N]
                          [--max-leases N] [--max-txn-ops N] [--reads-per-second N] [--writes-per-second N]
                          [--max-concurrent-requests N] [--max-watches N] [--max-watch-bytes N]
                          [--events-per-second N]
       baton tenant set NAME [--prefix P ...] [--max-keys N|none] ...
       baton tenant show NAME
       baton tenant list
       baton tenant delete NAME
  A tenant owns key prefixes (ending in /) and has quotas; over one, its requests get 429
  quota_exceeded and other tenants are unaffected. "none" removes a limit. show prints the
  limits beside the current use. Rates, concurrent requests, watches, buffered watch bytes and
  watch events per second are admitted on each node (per node, not per cell; show prints the use
  on the node that answered). Administration.`;

/** CLI flag -> the limit it sets. */
const limitFlags = {
  'max-keys': 'maxKeys', 'max-bytes': 'maxBytes', 'max-leases': 'maxLeases', 'max-txn-ops': 'maxTxnOps',
  'reads-per-second': 'readsPerSecond', 'writes-per-second': 'writesPerSecond',
  'max-concurrent-requests': 'maxConcurrentRequests', 'max-watches': 'maxWatches',
  'max-watch-bytes': 'maxWatchBytes', 'events-per-second': 'eventsPerSecond',
} as const;

interface Tenant {
  name: string;
  prefixes: string[];
  limits: Record<string, number | null>;
  usage: { keys: number; bytes: number; leases: number };
  /** The answering node's admission use and refusals (absent from an older server). */
  onThisNode?: { used: Record<string, number>; rejections: Record<string, number>; slowWatchersEnded: number };
}

const options = {
  prefix: { type: 'string', multiple: true },
  ...Object.fromEntries(Object.keys(limitFlags).map((flag) => [flag, { type: 'string' }])),
} as const;

export const tenantCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(tenantHelp, args, async () => {
    const { positionals, format, endpoints, values } = parseCommand(args, options as { prefix: { type: 'string'; multiple: true } });
    requirePositionals(positionals, 1, 2, '"create NAME", "set NAME", "show NAME", "list" or "delete NAME"');
    const [action, name] = positionals;
    const table = (await call(endpoints, 'GET', '/v1/tenants')) as { version: number; tenants: Tenant[] };
    if (action === 'list') {
      requirePositionals(positionals, 1, 1, '"list"');
      if (format === 'json') printJson(table);
      else printTable(['TENANT', 'PREFIXES', 'KEYS', 'BYTES'], table.tenants.map((t) => [t.name, t.prefixes.join(','), use(t, 'keys', 'maxKeys'), use(t, 'bytes', 'maxBytes')]));
      return exitCodes.ok;
    }
    requirePositionals(positionals, 2, 2, `"${String(action)} NAME"`);
    const path = `/v1/tenants/${encodeURIComponent(name as string)}`;
    const existing = table.tenants.find((t) => t.name === name);
    if (action === 'show') {
      if (existing === undefined) throw new UsageError(`no tenant named ${String(name)}`);
      if (format === 'json') return (printJson(existing), exitCodes.ok);
      console.log(`tenant ${existing.name}, prefixes ${existing.prefixes.join(',')}`);
      const node = existing.onThisNode;
      const onNode = (quota: string): string | number => node?.used[quota] ?? '-';
      const refused = (quota: string): number => node?.rejections[quota] ?? 0;
      printTable(['QUOTA', 'USE', 'LIMIT', 'REFUSED HERE'], [
        ['keys', existing.usage.keys, limitText(existing.limits['maxKeys']), refused('keys')],
        ['bytes', existing.usage.bytes, limitText(existing.limits['maxBytes']), refused('bytes')],
        ['leases', existing.usage.leases, limitText(existing.limits['maxLeases']), refused('leases')],
        ['txn ops', '-', limitText(existing.limits['maxTxnOps']), refused('txn_ops')],
        ['reads/s (this node)', onNode('reads_per_second'), limitText(existing.limits['readsPerSecond']), refused('reads_per_second')],
        ['writes/s (this node)', onNode('writes_per_second'), limitText(existing.limits['writesPerSecond']), refused('writes_per_second')],
        ['concurrent requests (this node)', onNode('concurrent_requests'), limitText(existing.limits['maxConcurrentRequests']), refused('concurrent_requests')],
        ['watches (this node)', onNode('watches'), limitText(existing.limits['maxWatches']), refused('watches')],
        ['watch bytes buffered (this node)', onNode('watch_bytes'), limitText(existing.limits['maxWatchBytes']), refused('watch_bytes')],
        ['watch events/s (this node)', onNode('events_per_second'), limitText(existing.limits['eventsPerSecond']), refused('events_per_second')],
      ]);
      if (node !== undefined) console.log(`slow watchers ended here for watch bytes: ${node.slowWatchersEnded}`);
      return exitCodes.ok;
    }
    if (action === 'delete') {
      if (existing === undefined) throw new UsageError(`no tenant named ${String(name)}`);
      printDone(format, await call(endpoints, 'DELETE', path), `tenant ${String(name)} deleted`);
      return exitCodes.ok;
    }
    if (action !== 'create' && action !== 'set') throw new UsageError(`unknown tenant action ${String(action)}`);
    if (action === 'create' && existing !== undefined) throw new UsageError(`tenant ${String(name)} exists (use "tenant set")`);
    if (action === 'set' && existing === undefined) throw new UsageError(`no tenant named ${String(name)} (use "tenant create")`);
    const prefixes = (values as { prefix?: string[] }).prefix ?? existing?.prefixes;
    if (prefixes === undefined || prefixes.length === 0) throw new UsageError('tenant create needs --prefix P');
    const limits: Record<string, number | null> = { ...(existing?.limits ?? {}) };
    for (const [flag, field] of Object.entries(limitFlags)) {
      const given = (values as unknown as Record<string, string | undefined>)[flag];
      if (given !== undefined) limits[field] = limitOfFlag(flag, given);
    }
    printDone(format, await call(endpoints, 'PUT', path, { prefixes, limits }), `tenant ${String(name)} ${action === 'create' ? 'created' : 'set'}`);
    return exitCodes.ok;
  });

function limitOfFlag(flag: string, given: string): number | null {
  if (given === 'none') return null;
  if (!/^\d+$/.test(given) || !Number.isSafeInteger(Number(given))) throw new UsageError(`--${flag} needs a whole number >= 0 or "none", not ${given}`);
  return Number(given);
}

function limitText(limit: number | null | undefined): string {
  return limit === null || limit === undefined ? 'unlimited' : String(limit);
}

function use(t: Tenant, stored: 'keys' | 'bytes', limit: string): string {
  return `${t.usage[stored]}/${limitText(t.limits[limit])}`;
}

function printDone(format: string, answer: unknown, what: string): void {
  if (format === 'json') return printJson(answer);
  console.log(`${what} (tenant table version ${(answer as { version: number }).version})`);
}
