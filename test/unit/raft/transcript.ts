// Transcript tests of the Raft core: a script of commands run against a small cluster whose
// every Ready and every lost message is printed, so the expected output reads as a specification
// of what Raft does (the shape of etcd-io/raft's datadriven testdata). A script file holds blocks:
//
//   # comments and blank lines between blocks
//   <command> <args...>
//   ----
//   <output, no blank lines>
//
// runTranscript() runs every block and returns the file with each block's output replaced by what
// the core printed; the test compares that to the file (BATON_REWRITE=1 writes it back). The
// cluster is deterministic: disks are instant, messages are delivered in send order, and the only
// randomness (election timeouts) comes from a SeededRandom.
//
// Commands (members by id; "all" or nothing means every member):
//   cluster voters=1,2,3 [learners=4] [seed=1] [prevote=true] [checkquorum=true] [election=10]
//           [heartbeat=1] [uncommitted=<bytes>]     a fresh cluster, no leader yet
//   campaign <id>            start an election (a pre-vote first when PreVote is on)
//   propose <id> <text>      RaftApi.propose; prints the result
//   forward <id> <text>      RaftApi.forwardProposal (a follower sends it to its leader)
//   conf <id> <addVoter|addLearner|remove> <member> [...]   enter joint consensus with the changes
//   transfer <from> <to>     leader transfer
//   read <id> <context>      RaftApi.readIndex
//   tick <id>[,<id>...]|all [<count>]    ticks only: no Ready is handled, nothing is delivered
//   ready <id>...            handle each member's pending Readys: print, queue the messages, advance
//   deliver [<to>...] [from=<id>]        deliver queued messages in order, printing each
//   stabilize [<id>...]      ready + deliver until nothing moves (prints the messages lost)
//   partition <id>... [/ <id>...]        members on different sides cannot talk (the unnamed: one side)
//   heal                     everyone talks again
//   status [<id>...]         role, term, vote, leader, commit, applied, last index, membership
//   progress [<id>...]       the leader's view of each follower (state, match, next) and member
//                            health as each member knows it (RaftStatus.inContact)
//   unreachable <id> <to>    RaftApi.reportUnreachable: the transport could not reach `to`
// A partition drops a message when it is delivered, not when it is written: messages of a Ready
// handled after `heal` get through.
import { SeededRandom } from '../../../src/base/random.js';
import {
  createRaftNode,
  decodeConfEntry,
  defaultRaftConfig,
  EntryType,
  type ConfChangeItem,
  type Entry,
  type MemberId,
  type RaftApi,
  type RaftConfig,
  type RaftMessage,
  type Ready,
} from '../../../src/raft/index.js';

const commands: Record<string, (run: Runner, args: string[]) => void> = {
  cluster: (run, args) => run.createCluster(args),
  campaign: (run, args) => run.each(args, (id) => run.raft(id).campaign()),
  propose: (run, args) => run.propose(args),
  forward: (run, args) => run.forward(args),
  conf: (run, args) => run.confChange(args),
  transfer: (run, args) => run.raft(run.id(args[0])).transferLeadership(run.id(args[1])),
  read: (run, args) => run.raft(run.id(args[0])).readIndex(run.number(args[1], 'a read context')),
  tick: (run, args) => run.tick(args),
  ready: (run, args) => run.each(args, (id) => run.handleReadys(id)),
  deliver: (run, args) => run.deliverCommand(args),
  stabilize: (run, args) => run.stabilize(args.length === 0 ? null : args.map((arg) => run.id(arg))),
  partition: (run, args) => run.partition(args),
  heal: (run) => run.heal(),
  status: (run, args) => run.status(args),
  progress: (run, args) => run.progress(args),
  unreachable: (run, args) => run.raft(run.id(args[0])).reportUnreachable(run.id(args[1])),
};

interface Block {
  /** Lines before the command (comments, blank lines), kept as they are. */
  readonly preamble: string[];
  readonly command: string;
  readonly expected: string[];
}

/** Splits a script into blocks; throws on a command without its `----` line. */
export function parseTranscript(text: string): { blocks: Block[]; trailer: string[] } {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const blocks: Block[] = [];
  let preamble: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] as string;
    if (line.trim() === '' || line.startsWith('#')) {
      preamble.push(line);
      i++;
      continue;
    }
    if (lines[i + 1] !== '----') throw new Error(`line ${i + 2}: expected ---- after the command "${line}"`);
    const expected: string[] = [];
    i += 2;
    while (i < lines.length && (lines[i] as string).trim() !== '') {
      if (lines[i + 1] === '----') throw new Error(`line ${i + 1}: a blank line must end the output before "${lines[i]}"`);
      expected.push(lines[i++] as string);
    }
    blocks.push({ preamble, command: line, expected });
    preamble = [];
  }
  return { blocks, trailer: preamble };
}

export interface TranscriptResult {
  /** The script with every block's output as the core produced it now. */
  readonly text: string;
  /** Blocks whose output differs from the script's. */
  readonly mismatches: { command: string; line: number; expected: string[]; actual: string[] }[];
}

export function runTranscript(text: string): TranscriptResult {
  const { blocks, trailer } = parseTranscript(text);
  const run = new Runner();
  const out: string[] = [];
  const mismatches: TranscriptResult['mismatches'] = [];
  for (const block of blocks) {
    out.push(...block.preamble);
    const line = out.length + 1;
    out.push(block.command, '----');
    let actual: string[];
    try {
      actual = run.execute(block.command);
    } catch (error) {
      (error as Error).message = `line ${line} (${block.command}): ${(error as Error).message}`;
      throw error;
    }
    out.push(...actual);
    if (actual.join('\n') !== block.expected.join('\n')) {
      mismatches.push({ command: block.command, line, expected: block.expected, actual });
    }
  }
  out.push(...trailer);
  return { text: out.join('\n') + '\n', mismatches };
}

interface Member {
  readonly raft: RaftApi;
}

class Runner {
  private readonly members = new Map<MemberId, Member>();
  private queue: RaftMessage[] = [];
  /** Member -> side of the partition it is on (members of different sides cannot talk). */
  private sides = new Map<MemberId, number>();
  private output: string[] = [];

  execute(line: string): string[] {
    this.output = [];
    const [name, ...args] = line.trim().split(/\s+/);
    const command = commands[name as string];
    if (command === undefined) throw new Error(`unknown command "${name}"`);
    // A core assertion propagates: a transcript never records one as expected output.
    command(this, args);
    if (this.output.length === 0) this.print('ok');
    return this.output;
  }

  print(line: string): void {
    this.output.push(line);
  }

  id(arg: string | undefined): MemberId {
    const id = this.number(arg, 'a member id');
    if (!this.members.has(id)) throw new Error(`no member ${id}`);
    return id;
  }

  number(arg: string | undefined, what: string): number {
    const value = Number(arg);
    if (arg === undefined || !Number.isSafeInteger(value)) throw new Error(`expected ${what}, got "${arg}"`);
    return value;
  }

  raft(id: MemberId): RaftApi {
    return (this.members.get(id) as Member).raft;
  }

  each(args: string[], action: (id: MemberId) => void): void {
    const ids = args.length === 0 || args[0] === 'all' ? [...this.members.keys()] : args.map((arg) => this.id(arg));
    for (const id of ids) action(id);
  }

  /** cluster voters=1,2,3 [learners=4] [seed=1] [prevote=true] [checkquorum=true] [election=10] [heartbeat=1] [uncommitted=N] */
  createCluster(args: string[]): void {
    const options = new Map(args.map((arg) => arg.split('=') as [string, string]));
    const list = (key: string): MemberId[] => (options.get(key) ?? '').split(',').filter((s) => s !== '').map(Number);
    const voters = list('voters');
    const learners = list('learners');
    const flag = (key: string, fallback: boolean): boolean => (options.get(key) ?? String(fallback)) === 'true';
    const config: Omit<RaftConfig, 'id'> = {
      ...defaultRaftConfig,
      preVote: flag('prevote', true),
      checkQuorum: flag('checkquorum', true),
      electionTicks: Number(options.get('election') ?? defaultRaftConfig.electionTicks),
      heartbeatTicks: Number(options.get('heartbeat') ?? defaultRaftConfig.heartbeatTicks),
      uncommittedBytesMax: Number(options.get('uncommitted') ?? defaultRaftConfig.uncommittedBytesMax),
    };
    const random = new SeededRandom(BigInt(options.get('seed') ?? '1'));
    this.members.clear();
    this.queue = [];
    this.sides.clear();
    for (const id of [...voters, ...learners]) {
      const raft = createRaftNode({ ...config, id }, {
        hardState: { term: 0, vote: 0, commit: 0 },
        snapshot: null,
        entries: [],
        initialConfState: { voters, votersOutgoing: [], learners },
        appliedIndex: 0,
      }, random.fork(id));
      this.members.set(id, { raft });
    }
  }

  propose(args: string[]): void {
    const [id, ...words] = args;
    const result = this.raft(this.id(id)).propose(encoder.encode(words.join(' ')));
    this.print(result.ok ? `ok index=${result.index} term=${result.term}` : `refused ${result.reason} leader=${result.leader}`);
  }

  forward(args: string[]): void {
    const [id, ...words] = args;
    this.print(this.raft(this.id(id)).forwardProposal(encoder.encode(words.join(' '))) ? 'forwarded' : 'not forwarded');
  }

  /** conf <id> <addVoter|addLearner|remove> <member> [<type> <member> ...] */
  confChange(args: string[]): void {
    const [id, ...rest] = args;
    const changes: ConfChangeItem[] = [];
    for (let i = 0; i < rest.length; i += 2) {
      const type = rest[i];
      if (type !== 'addVoter' && type !== 'addLearner' && type !== 'remove') throw new Error(`bad change type "${type}"`);
      changes.push({ type, id: this.number(rest[i + 1], 'a member id') });
    }
    const result = this.raft(this.id(id)).proposeConfChange({ type: 'enterJoint', changes });
    this.print(result.ok ? `ok index=${result.index} term=${result.term}` : `refused ${result.reason} leader=${result.leader}`);
  }

  /** tick <id>[,<id>...]|all [<count>]: ticks without handling Readys or delivering anything. */
  tick(args: string[]): void {
    const count = args[1] === undefined ? 1 : this.number(args[1], 'a tick count');
    const who = (args[0] ?? 'all').split(',');
    for (let i = 0; i < count; i++) this.each(who, (id) => this.raft(id).tick());
  }

  partition(args: string[]): void {
    // "partition 1 2" puts 1 and 2 on one side and everyone else on the other;
    // "partition 1 / 2 / 3" makes three sides.
    this.sides.clear();
    let side = 1;
    for (const arg of args) {
      if (arg === '/') side++;
      else this.sides.set(this.id(arg), side);
    }
  }

  heal(): void {
    this.sides.clear();
  }

  status(args: string[]): void {
    this.each(args, (id) => {
      const s = this.raft(id).status();
      const conf = formatConf(s.confState);
      this.print(`${id}: ${s.role} term=${s.term} vote=${s.vote} leader=${s.leader} commit=${s.commitIndex} applied=${s.appliedIndex} last=${s.lastIndex} ${conf}`);
    });
  }

  progress(args: string[]): void {
    this.each(args, (id) => {
      const s = this.raft(id).status();
      const followers = [...s.progress].filter(([member]) => member !== id).sort(([a], [b]) => a - b)
        .map(([member, pr]) => ` ${member}=${pr.state}/match=${pr.match}/next=${pr.next}`);
      const contact = s.inContact === null ? 'none' : `[${s.inContact.join(',')}]`;
      this.print(`${id}: contact=${contact}${s.role === 'leader' ? followers.join('') : ''}`);
    });
  }

  /** Every pending Ready of `id`: printed, its messages queued, its writes instantly durable. */
  handleReadys(id: MemberId): boolean {
    const raft = this.raft(id);
    let handled = false;
    while (raft.hasReady()) {
      handled = true;
      const ready = raft.ready();
      this.print(`> ${id} ready`);
      for (const line of formatReady(ready)) this.print(`  ${line}`);
      this.queue.push(...ready.appendMessages, ...ready.messages);
      raft.advance(ready);
    }
    return handled;
  }

  /** deliver [<to>...] [from=<id>]: queued messages, in order (to and from those members only, when given). */
  deliverCommand(args: string[]): void {
    const fromArg = args.find((arg) => arg.startsWith('from='));
    const from = fromArg === undefined ? null : this.id(fromArg.slice('from='.length));
    const to = args.filter((arg) => arg !== fromArg).map((arg) => this.id(arg));
    this.deliver(to.length === 0 ? null : to, from, true);
  }

  /** Deliver queued messages (those to `to` and from `from` only, when given); print those lost. */
  deliver(to: MemberId[] | null, from: MemberId | null = null, verbose = false): boolean {
    const chosen = (m: RaftMessage): boolean => (to === null || to.includes(m.to)) && (from === null || m.from === from);
    const now = this.queue.filter(chosen);
    this.queue = this.queue.filter((m) => !chosen(m));
    const lost: string[] = [];
    for (const message of now) {
      if (message.type === 'proposeRefused') {
        // The driver's business (RaftMessage): shown, and stepped like a driver would not.
        this.print(`> ${message.to} driver receives ${formatMessage(message)}`);
        continue;
      }
      const member = this.members.get(message.to);
      if (member === undefined || !this.canTalk(message.from, message.to)) {
        lost.push(`${message.from}->${message.to} ${message.type}${member === undefined ? ' (not running)' : ''}`);
        continue;
      }
      if (verbose) this.print(`> ${message.to} receives ${formatMessage(message)}`);
      member.raft.step(message);
    }
    if (lost.length > 0) this.print(`> lost: ${lost.join(', ')}`);
    return now.length > 0;
  }

  /** Handle Readys and deliver messages until nothing moves (among `ids` when given). */
  stabilize(ids: MemberId[] | null): void {
    for (let round = 0; round < 1000; round++) {
      let moved = false;
      for (const id of ids ?? [...this.members.keys()].sort((a, b) => a - b)) moved = this.handleReadys(id) || moved;
      moved = this.deliver(ids) || moved;
      if (!moved) return;
    }
    throw new Error('the cluster did not stabilize');
  }

  private canTalk(a: MemberId, b: MemberId): boolean {
    return (this.sides.get(a) ?? 0) === (this.sides.get(b) ?? 0);
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function formatReady(ready: Ready): string[] {
  const lines: string[] = [];
  if (ready.softState !== null) lines.push(`soft: ${ready.softState.role} leader=${ready.softState.leader}`);
  if (ready.hardState !== null) {
    const { term, vote, commit } = ready.hardState;
    lines.push(`hard: term=${term} vote=${vote} commit=${commit}`);
  }
  if (ready.snapshot !== null) {
    const meta = ready.snapshot.meta;
    lines.push(`snapshot: ${meta.term}/${meta.index} ${formatConf(meta.confState)}`);
  }
  if (ready.entries.length > 0) lines.push(`entries: ${ready.entries.map(formatEntry).join(', ')}`);
  if (ready.appendMessages.length > 0) {
    lines.push('append messages (sent before the write):');
    for (const m of ready.appendMessages) lines.push(`  ${formatMessage(m)}`);
  }
  if (ready.messages.length > 0) {
    lines.push('messages (sent after the write):');
    for (const m of ready.messages) lines.push(`  ${formatMessage(m)}`);
  }
  if (ready.committed.length > 0) lines.push(`committed: ${ready.committed.map(formatEntry).join(', ')}`);
  for (const read of ready.readStates) lines.push(`read state: context=${read.context} index=${read.index}`);
  if (ready.droppedReads.length > 0) lines.push(`dropped reads: ${ready.droppedReads.join(', ')}`);
  return lines;
}

function formatEntry(entry: Entry): string {
  const at = `${entry.term}/${entry.index}`;
  if (entry.type === EntryType.config) {
    const { change, confState } = decodeConfEntry(entry.data);
    const what = change.type === 'enterJoint'
      ? `enterJoint(${change.changes.map((c) => `${c.type} ${c.id}`).join(', ')})`
      : 'leaveJoint';
    return `${at} ${what} -> ${formatConf(confState)}`;
  }
  if (entry.data.byteLength === 0) return `${at} noop`;
  return `${at} "${decoder.decode(entry.data)}"`;
}

function formatConf(conf: { voters: readonly number[]; votersOutgoing: readonly number[]; learners: readonly number[] }): string {
  let text = `voters=(${conf.voters.join(' ')})`;
  if (conf.votersOutgoing.length > 0) text += `&&(${conf.votersOutgoing.join(' ')})`;
  if (conf.learners.length > 0) text += ` learners=(${conf.learners.join(' ')})`;
  return text;
}

function formatCommands(commands: readonly Uint8Array[]): string {
  return `[${commands.map((c) => `"${decoder.decode(c)}"`).join(' ')}]`;
}

export function formatMessage(m: RaftMessage): string {
  const head = `${m.from}->${m.to} ${m.type} term=${m.term}`;
  switch (m.type) {
    case 'append': {
      const entries = m.entries.length === 0 ? '' : ` entries=[${m.entries.map(formatEntry).join(', ')}]`;
      return `${head} prev=${m.prevTerm}/${m.prevIndex} commit=${m.commit}${entries}`;
    }
    case 'appendResponse':
      return m.reject
        ? `${head} reject index=${m.index} hint=${m.hintTerm}/${m.rejectHint}`
        : `${head} index=${m.index}`;
    case 'heartbeat':
      return `${head} commit=${m.commit}${m.readRound > 0 ? ` readRound=${m.readRound}` : ''} contact=${m.contact?.join(',') ?? '-'}`;
    case 'heartbeatResponse':
      return `${head}${m.readRound > 0 ? ` readRound=${m.readRound}` : ''}`;
    case 'vote':
    case 'preVote':
      return `${head} last=${m.lastTerm}/${m.lastIndex}${m.transfer ? ' transfer' : ''}`;
    case 'voteResponse':
    case 'preVoteResponse':
      return `${head} ${m.reject ? 'rejected' : 'granted'}`;
    case 'snapshot':
      return `${head} snapshot=${m.snapshot.meta.term}/${m.snapshot.meta.index}`;
    case 'timeoutNow':
    case 'ledgerQuery':
      return head;
    case 'ledgerReport':
      return `${head} record=${m.record.term} ack=${m.record.ackTerm}/${m.record.ackIndex} vote=${m.record.votedFor}@${m.record.voteTerm}`;
    case 'readIndex':
      return `${head} contexts=[${m.contexts.join(' ')}]`;
    case 'readIndexResponse':
      return `${head} contexts=[${m.contexts.join(' ')}] index=${m.index}`;
    case 'propose':
      return `${head} commands=${formatCommands(m.commands)}`;
    case 'proposeRefused':
      return `${head} reason=${m.reason} commands=${formatCommands(m.commands)}`;
  }
}
