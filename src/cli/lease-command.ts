// `baton lease grant|keepalive|revoke|timetolive|list`. `list` pages through GET /v1/leases
// (bounded pages, `after` = the last id seen) up to --limit leases.
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
} from './client-command.js';
import { renewalDelayMs, type LeaseKeepaliveResult as KeepaliveAnswer } from '../client/index.js';

const leaseHelp = `usage: baton lease grant TTL_SECONDS
       baton lease keepalive ID [--once]   renew every TTL/3 over the stream until Ctrl-C
       baton lease revoke ID               deletes every key attached, in one revision
       baton lease timetolive ID           remaining TTL and attached keys
       baton lease list [--limit N] [--after ID]
                                           leases ascending by id with remaining TTL
                                           (default at most 10,000; pages of 1,000)`;

export const leaseCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(leaseHelp, args, async () => {
    const options = {
      once: { type: 'boolean' },
      limit: { type: 'string' },
      after: { type: 'string' },
    } as const;
    const { values, positionals, format, endpoints, discover } = parseCommand(args, options);
    const [action, idText] = positionals;
    if (action === 'list') {
      requirePositionals(positionals, 1, 1, '"list" and no argument');
      const limit = integerFlag(values.limit, 'limit') ?? 10_000;
      const after = integerFlag(values.after, 'after') ?? 0;
      const client = makeClient(endpoints, discover);
      try {
        return await listLeases(client, limit, after, format);
      } finally {
        await client.close();
      }
    }
    requirePositionals(positionals, 2, 2, 'an action and one argument');
    const number = integerFlag(idText, action === 'grant' ? 'TTL' : 'ID') as number;
    const client = makeClient(endpoints, discover);
    try {
      if (action === 'grant') {
        const grant = await client.leaseGrant(number);
        if (format === 'json') printJson(grant);
        else if (format === 'table') printTable(['ID', 'TTL'], [[grant.id, grant.ttl]]);
        else console.log(`lease ${grant.id} granted with TTL ${grant.ttl}s`);
      } else if (action === 'revoke') {
        const revoked = await client.leaseRevoke(number);
        if (format === 'json') printJson(revoked);
        else {
          const { deleted, revision } = revoked;
          console.log(`lease ${number} revoked (${deleted} keys deleted at revision ${revision})`);
        }
      } else if (action === 'timetolive') {
        const info = await client.leaseTimeToLive(number);
        if (format === 'json') printJson(info);
        else if (format === 'table') {
          const row = [info.id, info.ttl, info.grantedTtl, info.keys.join(',')];
          printTable(['ID', 'TTL', 'GRANTED_TTL', 'KEYS'], [row]);
        } else {
          const keys = info.keys.join(', ') || '(none)';
          const granted = `granted ${info.grantedTtl}s`;
          console.log(`lease ${info.id} remaining ${info.ttl}s (${granted}), keys: ${keys}`);
        }
      } else if (action === 'keepalive') {
        return await keepalive(client, number, values.once === true, format === 'json');
      } else {
        throw new UsageError(`unknown lease action ${action}`);
      }
      return exitCodes.ok;
    } finally {
      await client.close();
    }
  });

const listPageMax = 1_000;

async function listLeases(
  client: ReturnType<typeof makeClient>,
  limit: number,
  afterId: number,
  format: 'simple' | 'json' | 'table',
): Promise<number> {
  const leases: { id: number; ttl: number; grantedTtl: number }[] = [];
  let after = afterId;
  let revision = 0;
  let more = true;
  while (more && leases.length < limit) {
    const page = await client.leaseList({ after, limit: Math.min(listPageMax, limit - leases.length) });
    revision = page.revision;
    leases.push(...page.leases);
    const last = page.leases.at(-1);
    more = page.more && last !== undefined;
    if (last !== undefined) after = last.id;
  }
  // Pages are read one after another: each is exact at its own revision, not all at one.
  if (format === 'json') printJson({ revision, leases, more });
  else if (format === 'table') {
    printTable(['ID', 'TTL', 'GRANTED_TTL'], leases.map((l) => [l.id, l.ttl, l.grantedTtl]));
  } else {
    for (const l of leases) console.log(`lease ${l.id} remaining ${l.ttl}s (granted ${l.grantedTtl}s)`);
    if (more) console.log(`(more: baton lease list --after ${after})`);
  }
  return exitCodes.ok;
}

async function keepalive(
  client: ReturnType<typeof makeClient>,
  id: number,
  once: boolean,
  json: boolean,
): Promise<number> {
  let stopped = false;
  const stop = (): void => {
    stopped = true;
  };
  process.once('SIGINT', stop);
  try {
    const frame = { type: 'keepalive', ids: [id] };
    while (!stopped) {
      const result = once
        ? await client.leaseKeepalive([id])
        : ((await client.stream.request(frame, 5_000)) as KeepaliveAnswer);
      const entry = result.leases.find((lease) => lease.id === id);
      if (entry === undefined || 'error' in entry) {
        console.error(`baton: lease_not_found: lease ${id} has expired or was revoked`);
        return exitCodes.failed;
      }
      if (json) printJson(entry);
      else console.log(`lease ${id} kept alive with TTL ${entry.ttl}s`);
      if (once) break;
      const deadline = Date.now() + renewalDelayMs(entry.ttl * 1000);
      while (!stopped && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    return exitCodes.ok;
  } finally {
    process.off('SIGINT', stop);
  }
}
