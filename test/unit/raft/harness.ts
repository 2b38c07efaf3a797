// A tiny synchronous network for unit tests of the Raft core: messages are delivered in order,
// disk writes are instant, and links can be cut. Whole-cluster fault schedules live in src/sim.
import { SeededRandom } from '../../../src/base/random.js';
import { createRaftNode, defaultRaftConfig, type Entry, type MemberId, type RaftApi, type RaftMessage, type ReadState } from '../../../src/raft/index.js';

export interface TestMember {
  readonly raft: RaftApi;
  readonly applied: Entry[];
  readonly readStates: ReadState[];
  readonly droppedReads: number[];
}

export class TestCluster {
  readonly members = new Map<MemberId, TestMember>();
  readonly sent: RaftMessage[] = [];
  private queue: RaftMessage[] = [];
  private readonly cut = new Set<string>();
  /** Rewrites each delivered message (e.g. a heartbeat as a protocol 2 leader sends it). */
  rewrite: ((message: RaftMessage) => RaftMessage) | null = null;

  constructor(voters: MemberId[], options: { learners?: MemberId[]; seed?: bigint; extra?: MemberId[]; config?: Partial<typeof defaultRaftConfig> } = {}) {
    const random = new SeededRandom(options.seed ?? 1n);
    const conf = { voters, votersOutgoing: [], learners: options.learners ?? [] };
    for (const id of [...voters, ...(options.learners ?? []), ...(options.extra ?? [])]) {
      const initial = (options.extra ?? []).includes(id) ? { voters: [], votersOutgoing: [], learners: [] } : conf;
      const raft = createRaftNode({ ...defaultRaftConfig, ...options.config, id }, {
        hardState: { term: 0, vote: 0, commit: 0 },
        snapshot: null,
        entries: [],
        initialConfState: initial,
        appliedIndex: 0,
      }, random.fork(id));
      this.members.set(id, { raft, applied: [], readStates: [], droppedReads: [] });
    }
  }

  member(id: MemberId): TestMember {
    const member = this.members.get(id);
    if (member === undefined) throw new Error(`no member ${id}`);
    return member;
  }

  isolate(id: MemberId): void {
    for (const other of this.members.keys()) {
      if (other === id) continue;
      this.cut.add(`${id}->${other}`);
      this.cut.add(`${other}->${id}`);
    }
  }

  heal(): void {
    this.cut.clear();
  }

  /** Run every member's Ready and deliver messages until nothing moves. */
  stabilize(limit = 10_000): void {
    for (let round = 0; round < limit; round++) {
      let moved = false;
      for (const member of this.members.values()) {
        while (member.raft.hasReady()) {
          moved = true;
          const ready = member.raft.ready();
          member.applied.push(...ready.committed);
          member.readStates.push(...ready.readStates);
          member.droppedReads.push(...ready.droppedReads);
          this.queue.push(...ready.appendMessages, ...ready.messages);
          member.raft.advance(ready);
        }
      }
      const queue = this.queue;
      this.queue = [];
      for (const message of queue) {
        moved = true;
        this.sent.push(message);
        if (this.cut.has(`${message.from}->${message.to}`)) continue;
        this.members.get(message.to)?.raft.step(this.rewrite === null ? message : this.rewrite(message));
      }
      if (!moved) return;
    }
    throw new Error('cluster did not stabilize');
  }

  tickAll(ticks: number): void {
    for (let i = 0; i < ticks; i++) {
      for (const member of this.members.values()) member.raft.tick();
      this.stabilize();
    }
  }

  leader(): MemberId {
    // The leader of the highest term (a deposed one may not know yet).
    const leaders = [...this.members.values()]
      .map((m) => m.raft.status())
      .filter((status) => status.role === 'leader')
      .sort((a, b) => b.term - a.term);
    return leaders[0]?.id ?? 0;
  }

  electLeader(id: MemberId): void {
    this.member(id).raft.campaign();
    this.stabilize();
  }

  /** Data of applied normal non-empty entries, as strings. */
  appliedData(id: MemberId): string[] {
    const decoder = new TextDecoder();
    return this.member(id)
      .applied.filter((entry) => entry.type === 0 && entry.data.byteLength > 0)
      .map((entry) => decoder.decode(entry.data));
  }
}

export const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
