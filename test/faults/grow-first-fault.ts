// The grow-first membership fault: the cell is first grown, then shrunk, so it never runs with
// fewer voters than it started with. A fresh node (a name and ports never used before) is added
// as a learner, started with --initial-cluster-state existing, caught up, promoted; only then an
// old voter (the leader when asked: the cell hands leadership over before it goes) is removed and
// its process stops. Repeated across a run, the members drift away from the initial ones.
// Workloads and checkers keep running throughout; the clients are told the new member list (the
// removed member's URL stays in their lists, where it only costs a failover).
//
// A removed member's data directory never rejoins: the fault restarts the removed node once on
// it, and that node must stop by itself and never report ready (a removed member serving as
// current would be the bug); it is never started again. A spare that is lost mid-way (the fault
// kills it after it is added, when asked, or it never catches up) is rolled back: the learner (or
// the voter, if its promotion got through) is removed, and its name is never used again.
import { rmSync } from 'node:fs';
import { findLeader, http, sleep, type TestCell } from '../cluster/harness.js';
import { listMembers, StepNotDone, untilDone, type Member } from './membership-fault.js';

export interface GrowFirstPlan {
  /** Remove the leader (else `pickOld` names the old voter to remove). */
  readonly removeLeader: boolean;
  /** Chooses among the old voters, from the nemesis's seeded stream. */
  readonly pickOld: (names: readonly string[]) => string;
  /** Kill the spare this long after its start and roll back (null: a normal cycle). */
  readonly loseSpareAfterMs: number | null;
}

export interface GrowFirstHooks {
  /** Progress lines for the nemesis log. */
  say(what: string): void;
  /** The member list changed (a voter added or removed): clients adopt it. */
  membersChanged(members: readonly Member[]): void;
}

/** How long a learner may take to catch up before the fault rolls it back. */
const catchUpMsMax = 30_000;
/**
 * How long a removed node may take to stop by itself, counted from its spawn: the process start
 * (module load, store open, WAL replay) comes first, and on a loaded machine that alone took most
 * of the 15 s this was (fault histories 17040 at load 29, 19412 at load 17, both stopped later).
 */
const stopMsMax = 30_000;

export interface GrowFirstOutcome {
  readonly added: string;
  /** The old voter removed; null when the cycle was rolled back. */
  readonly removed: string | null;
}

export async function growFirst(cell: TestCell, plan: GrowFirstPlan, hooks: GrowFirstHooks): Promise<GrowFirstOutcome> {
  const via = [...cell.names];
  const spare = await cell.addNode(via);
  const body = JSON.stringify({ name: spare, peerUrl: cell.cell.peerUrl(spare), clientUrl: cell.cell.clientUrl(spare) });
  const added = await untilDone(cell, via, `add ${spare}`, 'POST', '/v1/cluster/members', body);
  const id = added.member.id as number;
  hooks.say(`added ${spare} as learner ${id}`);
  cell.cell.start(spare, { join: true, via });
  if (plan.loseSpareAfterMs !== null) {
    await sleep(plan.loseSpareAfterMs);
    await cell.cell.kill9(spare);
    hooks.say(`${spare} lost (killed ${plan.loseSpareAfterMs} ms after its start)`);
  }
  try {
    // A lost spare may still have caught up before it died: then the promotion goes through and
    // the roll-back removes a voter. Otherwise the cell refuses it (not in sync) until we give up.
    const deadlineMs = plan.loseSpareAfterMs === null ? catchUpMsMax : 3_000;
    await untilDone(cell, via, `promote ${spare}`, 'POST', `/v1/cluster/members/${id}/promote`, null, deadlineMs);
    hooks.say(`promoted ${spare} (member ${id})`);
  } catch (error) {
    if (!(error instanceof StepNotDone)) throw error;
    const tail = cell.cell.tail(spare, 6).split('\n').map((line) => `      ${spare}| ${line}`).join('\n');
    hooks.say(`${spare} not promoted (${error.message}): rolling back; its last lines:\n${tail}`);
    await rollBack(cell, via, spare, id, hooks);
    return { added: spare, removed: null };
  }
  if (plan.loseSpareAfterMs !== null) {
    // Promoted while dead: the cell has a voter that will never answer; take it out again.
    await rollBack(cell, via, spare, id, hooks);
    return { added: spare, removed: null };
  }
  cell.names.push(spare);
  hooks.membersChanged(await listMembers(cell, cell.names));
  const victim = await chooseVictim(cell, plan, spare, via, hooks);
  await removeOld(cell, victim, hooks);
  return { added: spare, removed: victim };
}

async function chooseVictim(
  cell: TestCell,
  plan: GrowFirstPlan,
  spare: string,
  old: readonly string[],
  hooks: GrowFirstHooks,
): Promise<string> {
  const candidates = old.filter((name) => name !== spare && cell.names.includes(name));
  if (plan.removeLeader) {
    const leader = await findLeader(cell, cell.names, 5_000).catch(() => '');
    if (candidates.includes(leader)) {
      hooks.say(`removing the leader ${leader} (it hands over first)`);
      return leader;
    }
    hooks.say(`the leader (${leader || 'unknown'}) is not an old voter: removing another`);
  }
  return plan.pickOld(candidates);
}

/** Removes `victim` through the API (any member; a leader hands over), then retires its node. */
async function removeOld(cell: TestCell, victim: string, hooks: GrowFirstHooks): Promise<void> {
  const members = await listMembers(cell, cell.names);
  const member = members.find((m) => m.name === victim);
  if (member === undefined) throw new Error(`grow-first: ${victim} is not a member (${JSON.stringify(members)})`);
  await untilDone(cell, cell.names, `remove ${victim}`, 'DELETE', `/v1/cluster/members/${member.id}`, null);
  cell.names.splice(cell.names.indexOf(victim), 1);
  hooks.say(`removed ${victim} (member ${member.id})`);
  hooks.membersChanged(await listMembers(cell, cell.names));
  const stopped = await stopsByItself(cell, victim);
  if (stopped) hooks.say(`${victim} stopped by itself`);
  else {
    const tail = cell.cell.tail(victim, 12).split('\n').map((line) => `      ${victim}| ${line}`).join('\n');
    hooks.say(`${victim} still running ${stopMsMax} ms after its removal: stopped by SIGKILL; its last lines:\n${tail}`);
  }
  if (!stopped) await cell.cell.kill9(victim);
  await neverRejoins(cell, victim, hooks);
}

/**
 * The removed node restarted on its own data directory, as an operator's mistake would: it must
 * stop by itself and never say it is ready. A removed node that came back as a member (or served
 * as one) fails the run.
 */
async function neverRejoins(cell: TestCell, victim: string, hooks: GrowFirstHooks): Promise<void> {
  cell.cell.start(victim);
  const deadline = Date.now() + stopMsMax;
  while (cell.cell.isRunning(victim) && Date.now() < deadline) {
    const ready = await http(`${cell.cell.clientUrl(victim)}/readyz`, { timeoutMs: 1_000 }).catch(() => null);
    if (ready?.status === 200) {
      await cell.cell.kill9(victim);
      throw new Error(`grow-first: ${victim}, removed, restarted on its data directory and said it was ready`);
    }
    await sleep(200);
  }
  if (cell.cell.isRunning(victim)) {
    const tail = cell.cell.tail(victim, 20);
    await cell.cell.kill9(victim);
    throw new Error(`grow-first: ${victim}, removed, restarted on its data directory and did not stop within ${stopMsMax} ms; it last said:\n${tail}`);
  }
  const members = await listMembers(cell, cell.names);
  if (members.some((m) => m.name === victim)) throw new Error(`grow-first: ${victim} is a member again: ${JSON.stringify(members)}`);
  hooks.say(`${victim} restarted on its old data directory: refused and stopped`);
}

async function stopsByItself(cell: TestCell, name: string): Promise<boolean> {
  try {
    await cell.cell.waitExit(name, stopMsMax);
    return true;
  } catch {
    return false;
  }
}

/** Takes a spare that was not (or should not stay) promoted out of the cell; its name retires. */
async function rollBack(cell: TestCell, via: readonly string[], spare: string, id: number, hooks: GrowFirstHooks): Promise<void> {
  const live = via.filter((name) => cell.names.includes(name));
  await untilDone(cell, live, `roll back ${spare}`, 'DELETE', `/v1/cluster/members/${id}`, null);
  if (cell.cell.isRunning(spare)) await cell.cell.kill9(spare);
  rmSync(cell.cell.dataDirOf(spare), { recursive: true, force: true });
  hooks.say(`rolled back: ${spare} (member ${id}) removed, its node retired`);
  hooks.membersChanged(await listMembers(cell, cell.names));
}
