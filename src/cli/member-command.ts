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
       baton member replace OLD --name NEW --peer-url URL --client-url URL [--wait-s N]
  list     the cell's members (id, name, role voter|learner, health, URLs)
  add      registers NAME as a learner and prints the flags to start it with (the initial
           cluster with its client URLs, and the state "existing")
  promote  makes learner ID a voter; refused (412) until it has caught up with the leader
  remove   removes member ID (voter or learner; a removed leader steps down); one change at a time
  replace  the safe replacement, step by step: adds NEW as a learner (start it with the printed
           flags), waits until it has caught up and promotes it, and only then removes OLD (a name
           or an id). Refuses while another change is pending or when a voter is out of contact;
           run it again after an interruption and it goes on from the step the cell is at.
           --wait-s: how long to wait for NEW to catch up (default 600)`;

interface MemberAnswer {
  readonly member: { id: number; name: string; role: string; peerUrl: string; clientUrl: string };
  readonly initialCluster?: string;
  readonly initialClusterClients?: string;
}

export const memberCommand = async (args: readonly string[]): Promise<number> => {
  const action = args.find((arg) => !arg.startsWith('-'));
  // `baton member --help`: every action's usage (`baton member list --help` is the list's own).
  if (action === undefined && (args.includes('--help') || args.includes('-h'))) return runWithClient(help, args, async () => exitCodes.ok);
  if (action === 'list' || action === undefined) return listMembers(args);
  if (action === 'replace') return replaceCommand(args);
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

interface ListedMember {
  readonly id: number;
  readonly name: string;
  readonly role: 'voter' | 'learner';
  readonly healthy?: boolean;
  readonly peerUrl: string;
  readonly clientUrl: string;
}

const stepPauseMs = 500;

/**
 * `member replace`: grow first, shrink last, each step checked against the member table first so
 * a rerun after any interruption (this command, the leader) resumes where the cell is.
 */
async function replaceCommand(args: readonly string[]): Promise<number> {
  return runWithClient(help, args, async () => {
    const { positionals, values, endpoints, discover } = parseCommand(args, {
      name: { type: 'string' },
      'peer-url': { type: 'string' },
      'client-url': { type: 'string' },
      'wait-s': { type: 'string' },
    });
    requirePositionals(positionals, 2, 2, 'replace and the member to replace');
    const old = positionals[1] as string;
    const name = values.name;
    const peerUrl = values['peer-url'];
    const clientUrl = values['client-url'];
    if (name === undefined || peerUrl === undefined || clientUrl === undefined) throw new UsageError('replace needs --name, --peer-url and --client-url');
    const waitMs = (integerFlag(values['wait-s'], '--wait-s') ?? 600) * 1000;
    const client = makeClient(endpoints, discover);
    const step = (text: string): void => console.log(text);
    // The status's member list: roles and, as the leader sees it, who is in contact.
    const members = async (): Promise<ListedMember[]> =>
      (await client.request<{ members: ListedMember[] }>({ method: 'GET', path: '/v1/cluster/status', mutation: false })).members;
    try {
      let table = await members();
      const target = table.find((m) => m.name === old || String(m.id) === old);
      const fresh = table.find((m) => m.name === name);
      if (target === undefined) {
        if (fresh?.role === 'voter') {
          step(`${old} is no member and ${name} is a voter: the replacement is done`);
          return exitCodes.ok;
        }
        throw new UsageError(`${old} is not a member of the cell`);
      }
      if (target.name === name) throw new UsageError('--name must name the new member, not the one it replaces');
      const pending = table.filter((m) => m.role === 'learner' && m.name !== name);
      if (pending.length > 0) throw new UsageError(`another change is pending: learner ${pending.map((m) => m.name).join(', ')}; finish or remove it first`);
      const outOfContact = table.filter((m) => m.role === 'voter' && m.healthy === false && m.id !== target.id);
      if (outOfContact.length > 0) {
        throw new UsageError(`voter ${outOfContact.map((m) => m.name).join(', ')} is out of contact: replacing ${old} now could lose the quorum`);
      }
      // 1. NEW joins as a learner (or already did: a rerun).
      let added = fresh;
      if (added === undefined) {
        const answer = await client.request<MemberAnswer>({
          method: 'POST', path: '/v1/cluster/members', body: JSON.stringify({ name, peerUrl, clientUrl }),
          headers: { 'content-type': 'application/json' }, mutation: true,
        });
        added = { ...answer.member, role: 'learner' } as ListedMember;
        step(`1/3 ${name} (member ${added.id}) added as a learner; start it with:`);
        step(`  --name ${name} --listen-peer ${peerUrl} --listen-client ${clientUrl} \\`);
        step(`  --initial-cluster ${answer.initialCluster ?? ''} \\`);
        step(`  --initial-cluster-clients ${answer.initialClusterClients ?? ''} --initial-cluster-state existing`);
      } else {
        step(`1/3 ${name} (member ${added.id}) is already a ${added.role}`);
      }
      // 2. Promote once caught up (the cell refuses earlier with 412).
      if (added.role === 'learner') {
        step(`2/3 waiting for ${name} to catch up (up to ${waitMs / 1000} s)...`);
        const deadline = performance.now() + waitMs;
        for (;;) {
          try {
            await client.request<MemberAnswer>({ method: 'POST', path: `/v1/cluster/members/${added.id}/promote`, mutation: true });
            break;
          } catch (error) {
            const code = (error as { code?: string }).code;
            if (code !== 'precondition_failed' && code !== 'unavailable' && code !== 'timeout') throw error;
            if (performance.now() > deadline) throw new Error(`${name} did not catch up within ${waitMs / 1000} s (still a learner; run replace again)`);
            await new Promise((resolve) => setTimeout(resolve, stepPauseMs));
          }
        }
        step(`2/3 ${name} promoted to voter`);
      } else {
        step(`2/3 ${name} is a voter`);
      }
      // 3. Only now the old member goes (a leader hands over first).
      table = await members();
      if (table.some((m) => m.id === target.id)) {
        await client.request<MemberAnswer>({ method: 'DELETE', path: `/v1/cluster/members/${target.id}`, mutation: true });
      }
      step(`3/3 ${target.name} (member ${target.id}) removed: ${name} replaced it; stop ${target.name}'s process and keep its data directory out of the cell`);
      return exitCodes.ok;
    } finally {
      await client.close();
    }
  });
}
