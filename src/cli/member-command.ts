// `baton member list|add|promote|remove`: changing the cell's members (like etcdctl member ...).
// A new node joins as a learner: `add` prints the flags to start it with, `promote` makes it a
// voter once it has caught up (the cell refuses earlier), `remove` takes any member out.
import {
  exitCodes,
  integerFlag,
  makeClient,
  parseCommand,
  printJson,
  requirePositionals,
  runWithClient,
  UsageError,
} from './client-command.js';
import { memberCommand as listMembers } from './cluster-commands.js';

const help = `usage: baton member list
       baton member add NAME --peer-url URL --client-url URL
       baton member promote ID
       baton member remove ID
  list     the cell's members (id, name, role voter|learner, health, URLs)
  add      registers NAME as a learner and prints the flags to start it with
           (--initial-cluster, --initial-cluster-clients, --initial-cluster-state existing)
  promote  makes learner ID a voter; refused (412) until it has caught up with the leader
  remove   removes member ID (voter or learner; a removed leader steps down); one change at a time`;

interface MemberAnswer {
  readonly member: { id: number; name: string; role: string; peerUrl: string; clientUrl: string };
  readonly initialCluster?: string;
  readonly initialClusterClients?: string;
}

export const memberCommand = async (args: readonly string[]): Promise<number> => {
  const action = args.find((arg) => !arg.startsWith('-'));
  if (action === 'list' || action === undefined) return listMembers(args);
  return runWithClient(help, args, async () => {
    const { positionals, values, format, endpoints, discover } = parseCommand(args, {
      'peer-url': { type: 'string' },
      'client-url': { type: 'string' },
    });
    requirePositionals(positionals, 2, 2, `${action} and one argument`);
    const argument = positionals[1] as string;
    const client = makeClient(endpoints, discover);
    try {
      let answer: MemberAnswer;
      if (action === 'add') {
        const peerUrl = values['peer-url'];
        const clientUrl = values['client-url'];
        if (peerUrl === undefined || clientUrl === undefined) throw new UsageError('add needs --peer-url and --client-url');
        const body = JSON.stringify({ name: argument, peerUrl, clientUrl });
        answer = await client.request<MemberAnswer>({ method: 'POST', path: '/v1/cluster/members', body, mutation: true });
      } else if (action === 'promote' || action === 'remove') {
        const id = integerFlag(argument, 'ID') as number;
        answer = await client.request<MemberAnswer>(action === 'promote'
          ? { method: 'POST', path: `/v1/cluster/members/${id}/promote`, mutation: true }
          : { method: 'DELETE', path: `/v1/cluster/members/${id}`, mutation: true });
      } else {
        throw new UsageError(`unknown member action ${action}`);
      }
      if (format === 'json') printJson(answer);
      else {
        const m = answer.member;
        const done = action === 'add' ? 'added as learner' : action === 'promote' ? 'promoted to voter' : 'removed';
        console.log(`member ${m.id} (${m.name}) ${done}`);
        if (answer.initialCluster !== undefined) {
          console.log(`start it with:\n  --name ${m.name} --listen-peer ${m.peerUrl} --listen-client ${m.clientUrl} \\`);
          console.log(`  --initial-cluster ${answer.initialCluster} \\`);
          console.log(`  --initial-cluster-clients ${answer.initialClusterClients ?? ''} --initial-cluster-state existing`);
        }
      }
      return exitCodes.ok;
    } finally {
      await client.close();
    }
  });
};
