// `baton member list`, `baton status`, `baton compact`: the cell's shape and maintenance.
import { BatonClient, defaultEndpoints } from '../client/index.js';
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

const memberHelp = `usage: baton member list
  Lists the cell's members (id, name, role, health, URLs) as one node sees them.`;
const statusHelp = `usage: baton status
  Shows each endpoint's view: member, leader, term, commit/applied index, revision, compaction,
  the fencing epoch, and the backup a restored cell came from (baton snapshot restore).`;
const compactHelp = `usage: baton compact REVISION
  Discards history below REVISION (watches and reads before it then answer compacted).`;

export const memberCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(memberHelp, args, async () => {
    const { positionals, format, endpoints, discover } = parseCommand(args, {});
    requirePositionals(positionals, 1, 1, '"list"');
    if (positionals[0] !== 'list') throw new UsageError(`unknown member action ${positionals[0]}`);
    const client = makeClient(endpoints, discover);
    try {
      const status = await client.status();
      if (format === 'json') printJson({ leader: status.leader, members: status.members });
      else {
        const rows = status.members.map((m) => [
          m.id,
          m.name,
          m.role,
          m.healthy ? 'healthy' : 'unhealthy',
          m.id === status.leader ? 'leader' : '',
          m.clientUrl,
          m.peerUrl,
        ]);
        const header = ['ID', 'NAME', 'ROLE', 'HEALTH', 'LEADER', 'CLIENT_URL', 'PEER_URL'];
        if (format === 'table') printTable(header, rows);
        else for (const row of rows) console.log(row.filter((cell) => cell !== '').join(', '));
      }
      return exitCodes.ok;
    } finally {
      await client.close();
    }
  });

export const statusCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(statusHelp, args, async () => {
    const { positionals, format, endpoints } = parseCommand(args, {});
    requirePositionals(positionals, 0, 0, 'no arguments');
    // Each endpoint answers for itself (like etcdctl endpoint status), so ask them one by one.
    const seeds = endpoints ?? defaultEndpoints;
    const rows: unknown[][] = [];
    const answers: unknown[] = [];
    let failures = 0;
    let restoredFrom: string | null = null;
    for (const endpoint of seeds) {
      const client = new BatonClient({
        endpoints: [endpoint],
        discover: false,
        retry: { attemptsMax: 2, deadlineMs: 3_000, attemptTimeoutMs: 2_000 },
      });
      try {
        const status = await client.status();
        answers.push({ endpoint, ...status });
        const { member, leader, term, commitIndex, appliedIndex, revision } = status;
        const compact = status.compactRevision;
        rows.push([endpoint, member, leader, term, commitIndex, appliedIndex, revision, compact, status.epoch]);
        const from = status.restoredFrom;
        if (from !== null && from !== undefined) {
          restoredFrom = `restored from backup sha256 ${from.fileSha256} (revision ${from.oldRevision}, epoch ${from.oldEpoch}) into epoch ${from.epoch} at ${from.time}`;
        }
      } catch (error) {
        failures++;
        const code = (error as { code?: string }).code ?? 'unavailable';
        answers.push({ endpoint, error: { code, message: (error as Error).message } });
        rows.push([endpoint, 'unreachable', '', '', '', '', '', '', '']);
      }
    }
    if (format === 'json') printJson(answers);
    else if (format === 'table') {
      const header = ['ENDPOINT', 'MEMBER', 'LEADER', 'TERM', 'COMMIT', 'APPLIED', 'REVISION'];
      printTable([...header, 'COMPACT', 'EPOCH'], rows);
    }
    else for (const row of rows) console.log(row.filter((cell) => cell !== '').join(', '));
    if (format !== 'json' && restoredFrom !== null) console.log(restoredFrom);
    return failures === seeds.length ? exitCodes.unavailable : exitCodes.ok;
  });

export const compactCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(compactHelp, args, async () => {
    const { positionals, format, endpoints, discover } = parseCommand(args, {});
    requirePositionals(positionals, 1, 1, 'one REVISION');
    const revision = integerFlag(positionals[0], 'REVISION') as number;
    const client = makeClient(endpoints, discover);
    try {
      const result = await client.compact(revision);
      if (format === 'json') printJson(result);
      else console.log(`compacted at revision ${result.compactRevision}`);
      return exitCodes.ok;
    } finally {
      await client.close();
    }
  });
