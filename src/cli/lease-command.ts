// `baton lease grant|keepalive|revoke|timetolive`. There is no `lease list`: the API has no
// endpoint that lists leases (api.md, docs/api/leases.md), so the CLI does not pretend to.
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
  (no "lease list": the API offers no way to list leases)`;

export const leaseCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(leaseHelp, args, async () => {
    const options = { once: { type: 'boolean' } } as const;
    const { values, positionals, format, endpoints } = parseCommand(args, options);
    const [action, idText] = positionals;
    requirePositionals(positionals, 2, 2, 'an action and one argument');
    const number = integerFlag(idText, action === 'grant' ? 'TTL' : 'ID') as number;
    const client = makeClient(endpoints);
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
