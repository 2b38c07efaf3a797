// The fault schedule: partitions (symmetric, one-way, minority/majority splits, an isolated
// leader), crashes with restarts, pauses, membership changes and leader transfers, drawn one at a
// time during the fault phase. Each fault that has an end schedules its own undo.
import type { Random } from '../base/random.js';
import { chance, pick, randomInt } from '../base/random.js';
import type { ConfChangeItem, ConfState, MemberId, RaftApi } from '../raft/index.js';
import type { SimNode } from './sim-node.js';
import type { FaultWeights } from './types.js';
import type { World } from './world.js';

const membersMax = 7;

export class Nemesis {
  active = true;
  /** Members whose removal was proposed, with the log index of that proposal. */
  private readonly removing = new Map<MemberId, number>();
  private nextMemberId: MemberId;

  constructor(
    private readonly world: World,
    private readonly random: Random,
    firstFreeId: MemberId,
  ) {
    this.nextMemberId = firstFreeId;
  }

  /** Draw and perform one fault. */
  act(): void {
    if (!this.active) return;
    this.decommissionRemoved();
    const weights = this.world.scenario.faultWeights;
    const kind = drawKind(this.random, weights);
    if (kind === null) return;
    if (kind === 'partition' || kind === 'membership' || kind === 'transfer')
      this.world.stats[statName[kind]]++;
    if (kind === 'partition') this.partition();
    else if (kind === 'crash') this.crash();
    else if (kind === 'pause') this.pause();
    else if (kind === 'membership') this.changeMembership();
    else this.transfer();
  }

  /** Strike a new leader soon after its election (see Scenario.leaderChurnRate). */
  onLeaderElected(node: SimNode): void {
    const world = this.world;
    if (!this.active || !chance(this.random, world.scenario.leaderChurnRate)) return;
    const atMs = this.duration(0, world.scenario.networkDelayMsMax * 3);
    const how = randomInt(this.random, 0, 2);
    const incarnation = node.incarnation;
    world.at(atMs, `CHURN n${node.id}`, () => {
      if (!this.active || node.incarnation !== incarnation || node.state !== 'running') return;
      if (how === 0) {
        world.crash(node);
        world.at(this.duration(20, 600), `RESTART n${node.id}`, () => world.restart(node));
      } else if (how === 1) {
        world.pause(node);
        world.at(this.duration(20, 600), `RESUME n${node.id}`, () => world.resume(node));
      } else {
        for (const id of world.nodes.keys())
          (world.network.block(node.id, id), world.network.block(id, node.id));
        world.at(this.duration(20, 600), 'HEAL network', () => world.network.heal());
      }
    });
  }

  private duration(minMs: number, maxMs: number): number {
    return this.world.nowMs + randomInt(this.random, minMs, maxMs);
  }

  private partition(): void {
    const world = this.world;
    const ids = world.runningNodes().map((node) => node.id);
    if (ids.length < 2) return;
    const leader = world.leader();
    const shape = randomInt(this.random, 0, 4);
    const victim = shape === 1 && leader !== null ? leader.id : pick(this.random, ids);
    const others = ids.filter((id) => id !== victim);
    let description: string;
    if (shape <= 1) {
      for (const id of others) (world.network.block(victim, id), world.network.block(id, victim));
      description = `isolate ${victim}`;
    } else if (shape === 2) {
      for (const id of others) world.network.block(victim, id);
      description = `one-way: ${victim} cannot send`;
    } else if (shape === 3) {
      for (const id of others) world.network.block(id, victim);
      description = `one-way: ${victim} cannot receive`;
    } else {
      const minority = shuffled(this.random, ids).slice(0, Math.max(1, ids.length >> 1));
      for (const a of minority)
        for (const b of ids)
          if (!minority.includes(b)) (world.network.block(a, b), world.network.block(b, a));
      description = `split [${minority.join(',')}] from the rest`;
    }
    world.trace('-', `PARTITION ${description}`);
    world.emit({ type: 'fault', timeMs: world.nowMs, description: `partition: ${description}` });
    world.at(this.duration(50, 2000), 'HEAL network', () => world.network.heal());
  }

  private crash(): void {
    const world = this.world;
    const nodes = world.runningNodes();
    if (nodes.length === 0) return;
    const leader = world.leader();
    const node = leader !== null && chance(this.random, 0.4) ? leader : pick(this.random, nodes);
    const restartAtMs = this.duration(20, 1500);
    const restart = (): void =>
      world.at(Math.max(restartAtMs, world.nowMs), `RESTART n${node.id}`, () =>
        world.restart(node),
      );
    if (chance(this.random, 0.5)) {
      // Half the crashes wait for a write in progress, where losing or tearing it matters.
      world.crashDuringNextWrite(node, restart);
      return;
    }
    world.crash(node);
    restart();
  }

  private pause(): void {
    const world = this.world;
    const nodes = world.runningNodes();
    if (nodes.length === 0) return;
    const leader = world.leader();
    const node = leader !== null && chance(this.random, 0.5) ? leader : pick(this.random, nodes);
    world.pause(node);
    world.at(this.duration(20, 1200), `RESUME n${node.id}`, () => world.resume(node));
  }

  /** Hand leadership over; now and then an operator's odd request instead, which must be safe. */
  private transfer(): void {
    const world = this.world;
    const roll = randomInt(this.random, 0, 9);
    if (roll < 2) {
      // Any member (a follower, a learner, one being removed) starts an election now.
      const nodes = world.runningNodes();
      if (nodes.length === 0) return;
      const node = pick(this.random, nodes);
      world.traceNode(node, 'CAMPAIGN (operator)');
      (node.core as RaftApi).campaign();
      node.pump();
      return;
    }
    const leader = world.leader();
    if (leader === null) return;
    const core = leader.core as RaftApi;
    const voters = core.status().confState.voters.filter((id) => id !== leader.id);
    // One time in ten the target is anyone the sim ever started (learners, removed, itself).
    const candidates = roll === 2 ? [...world.nodes.keys()] : voters;
    if (candidates.length === 0) return;
    const to = pick(this.random, candidates);
    world.traceNode(leader, `TRANSFER leadership to ${to}`);
    core.transferLeadership(to);
    leader.pump();
  }

  private changeMembership(): void {
    const leader = this.world.leader();
    if (leader === null) return;
    const core = leader.core as RaftApi;
    const conf = core.status().confState;
    if (conf.votersOutgoing.length > 0) return; // one change at a time
    if (chance(this.random, 0.1)) {
      this.proposeInvalidChange(leader, conf);
      return;
    }
    const changes = this.drawChange(conf);
    if (changes === null) return;
    const result = core.proposeConfChange({ type: 'enterJoint', changes });
    const text = changes.map((c) => `${c.type} ${c.id}`).join(', ');
    this.world.traceNode(
      leader,
      `CONF CHANGE ${text}: ${result.ok ? `at ${result.index}` : result.reason}`,
    );
    this.world.emit({
      type: 'fault',
      timeMs: this.world.nowMs,
      description: `membership: ${text}`,
    });
    if (result.ok) for (const c of changes) if (c.type === 'remove') this.removing.set(c.id, result.index);
    leader.pump();
  }

  /** A change that makes no sense for `conf` must be refused, never appended. */
  private proposeInvalidChange(leader: SimNode, conf: ConfState): void {
    const voter = pick(this.random, conf.voters);
    const invalid: ConfChangeItem[][] = [
      [{ type: 'addVoter', id: voter }],
      [{ type: 'addLearner', id: voter }],
      [{ type: 'remove', id: 60_000 }],
      [],
      [
        { type: 'addLearner', id: 60_001 },
        { type: 'remove', id: 60_001 },
      ],
    ];
    const changes = pick(this.random, invalid);
    const result = (leader.core as RaftApi).proposeConfChange({ type: 'enterJoint', changes });
    const text = JSON.stringify(changes);
    this.world.traceNode(
      leader,
      `INVALID CONF CHANGE ${text}: ${result.ok ? 'accepted' : result.reason}`,
    );
    if (result.ok) {
      this.world.report(
        'invalid membership change refused',
        `leader ${leader.id} accepted ${text}`,
      );
    }
  }

  private drawChange(conf: ConfState): ConfChangeItem[] | null {
    const world = this.world;
    const members = new Set([...conf.voters, ...conf.learners]);
    const options: ConfChangeItem[][] = [];
    // A member we started whose addLearner was lost: ask again rather than start another.
    const waiting = [...world.nodes.values()].find(
      (n) => !members.has(n.id) && n.state !== 'removed' && !this.removing.has(n.id),
    );
    if (waiting !== undefined) options.push([{ type: 'addLearner', id: waiting.id }]);
    else if (members.size < membersMax) options.push([{ type: 'addLearner', id: 0 }]);
    for (const learner of conf.learners) {
      if (conf.voters.length < 6) options.push([{ type: 'addVoter', id: learner }]);
      options.push([{ type: 'remove', id: learner }]);
      const voter = pick(this.random, conf.voters);
      options.push([
        { type: 'addVoter', id: learner },
        { type: 'remove', id: voter },
      ]);
    }
    if (conf.voters.length > 3)
      options.push([{ type: 'remove', id: pick(this.random, conf.voters) }]);
    if (options.length === 0) return null;
    const changes = pick(this.random, options);
    if (changes[0]?.type === 'addLearner' && changes[0].id === 0) {
      const id = this.nextMemberId++;
      // A joiner boots with no configuration and learns it from the log or a snapshot.
      world.addMember(id, { voters: [], votersOutgoing: [], learners: [] });
      return [{ type: 'addLearner', id }];
    }
    return changes;
  }

  /**
   * Stop members whose removal the current leader has applied (the operator shuts them down).
   * Only a leader that has applied the removal's index: a stale leader whose configuration never
   * held the member yet (its add not applied there) is no proof, and the removal itself may be
   * lost with its proposer (seed 628442: member 4 stopped while still in the configuration).
   */
  decommissionRemoved(): void {
    const leader = this.world.leader();
    if (leader === null || this.removing.size === 0) return;
    const conf = (leader.core as RaftApi).status().confState;
    if (conf.votersOutgoing.length > 0) return;
    for (const [id, index] of [...this.removing]) {
      if (leader.appliedIndex < index) continue;
      if (conf.voters.includes(id) || conf.learners.includes(id)) continue;
      this.removing.delete(id);
      const node = this.world.nodes.get(id);
      if (node !== undefined) this.world.decommission(node);
    }
  }
}

type FaultKind = keyof FaultWeights;
const kinds: readonly FaultKind[] = ['partition', 'crash', 'pause', 'membership', 'transfer'];
// Crashes and pauses are counted by the world, which the demo drives directly too.
const statName = {
  partition: 'partitions',
  membership: 'membershipChanges',
  transfer: 'transfers',
} as const;

function drawKind(random: Random, weights: FaultWeights): FaultKind | null {
  const total = kinds.reduce((sum, kind) => sum + weights[kind], 0);
  if (total <= 0) return null;
  let point = randomInt(random, 0, total * 1000 - 1) / 1000;
  for (const kind of kinds) {
    point -= weights[kind];
    if (point < 0) return kind;
  }
  return kinds[kinds.length - 1] as FaultKind;
}

function shuffled<T>(random: Random, items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = randomInt(random, 0, i);
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}
