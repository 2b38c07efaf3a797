// `baton elect NAME [VALUE]`: with VALUE, campaigns until elected, prints the leadership and
// holds it until Ctrl-C (then resigns); exits 4 if the session is lost first. Without VALUE,
// observes: prints the current leader, then every change, until Ctrl-C or --count changes.
import type { Election, Leadership, LeadershipChange } from '../client/index.js';
import { LockHeldError } from '../client/index.js';
import {
  exitCodes,
  integerFlag,
  makeClient,
  parseCommand,
  printJson,
  requirePositionals,
  runWithClient,
  type OutputFormat,
} from './client-command.js';
import { lockLostExitCode } from './lock-command.js';

const electHelp = `usage: baton elect NAME VALUE [--ttl SECONDS] [--wait MS]
       baton elect NAME [--count N]
  With VALUE: campaigns in election NAME (waits in line; at most --wait ms, default no limit),
  then prints "elected" with the term (the leadership's fencing token) and holds leadership until
  Ctrl-C, when it resigns. Exits 4 if the session is lost first (leadership then ends with it).
  Without VALUE: prints the current leader, then every change of leader or value, in order,
  until Ctrl-C or after --count changes.`;

/** One campaign call waits at most this long (the API's maximum); longer waits campaign again. */
const campaignWaitMsMax = 300_000;

export const electCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(electHelp, args, async () => {
    const { values, positionals, format, endpoints, discover } = parseCommand(args, {
      ttl: { type: 'string' },
      wait: { type: 'string' },
      count: { type: 'string' },
    });
    requirePositionals(positionals, 1, 2, 'NAME [VALUE]');
    const [name, value] = positionals as [string, string | undefined];
    const client = makeClient(endpoints, discover);
    try {
      if (value === undefined) {
        const count = integerFlag(values.count, 'count');
        return await observe(client.election(null, name), count, format);
      }
      const session = await client.session({ ttlSeconds: integerFlag(values.ttl, 'ttl') ?? 10 });
      try {
        const waitMs = integerFlag(values.wait, 'wait');
        const leadership = await campaign(client.election(session, name), value, waitMs);
        return await holdLeadership(leadership, format);
      } finally {
        await session.close().catch(() => undefined);
      }
    } finally {
      await client.close();
    }
  });

async function campaign(election: Election, value: string, waitMs: number | undefined): Promise<Leadership> {
  const deadline = waitMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + waitMs;
  for (;;) {
    const left = Math.max(0, Math.min(campaignWaitMsMax, deadline - Date.now()));
    try {
      return await election.campaign(value, { waitMs: left });
    } catch (error) {
      if (!(error instanceof LockHeldError) || Date.now() >= deadline) throw error;
    }
  }
}

function print(change: LeadershipChange, name: string, format: OutputFormat, elected = false): void {
  const { leader, revision } = change;
  if (format === 'json') printJson({ name, revision, leader, ...(elected ? { elected } : {}) });
  else if (leader === null) console.log(`no leader (revision ${revision})`);
  else {
    const what = elected ? 'elected' : 'leader';
    console.log(`${what}: ${leader.value} (term ${leader.term}, key ${leader.key}, revision ${revision})`);
  }
}

async function holdLeadership(leadership: Leadership, format: OutputFormat): Promise<number> {
  const leader = { key: leadership.key, value: leadership.value, term: leadership.term, lease: leadership.lease };
  print({ revision: leadership.revision, leader }, leadership.name, format, true);
  const outcome = await new Promise<'stopped' | 'lost'>((resolve) => {
    const stop = (): void => resolve('stopped');
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    leadership.signal.addEventListener('abort', () => resolve('lost'), { once: true });
  });
  if (outcome === 'stopped') {
    await leadership.resign();
    return exitCodes.ok;
  }
  const reason = leadership.signal.reason as { code?: string; message?: string } | undefined;
  console.error(`baton: ${reason?.code ?? 'session_lost'}: leadership of ${leadership.name} lost: ${reason?.message ?? ''}`);
  return lockLostExitCode;
}

async function observe(election: Election, count: number | undefined, format: OutputFormat): Promise<number> {
  const observer = election.observe();
  const stop = (): void => observer.cancel();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    let seen = 0;
    for await (const change of observer) {
      print(change, election.name, format);
      if (count !== undefined && ++seen >= count) break;
    }
    return exitCodes.ok;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
