// The membership fault: a member (the leader half the time) is removed from the cell through the
// API, killed, and after a while comes back as a new member: its data directory wiped, added as
// a learner (a new id: ids are never reused), started with --initial-cluster-state existing so
// it catches up from the leader (snapshot or log), then promoted once the cell says it is in
// sync. Workloads and checkers keep running throughout: the cell shrinks to n-1 voters and grows
// back through joint consensus, never by editing configurations by hand.
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { http, sleep, type TestCell } from '../cluster/harness.js';

/** How long one step (remove, add, promote) may keep being refused before the fault gives up. */
const stepDeadlineMs = 60_000;

export interface Member {
  readonly id: number;
  readonly name: string;
  readonly role: 'voter' | 'learner';
  readonly clientUrl: string;
}

/** A step kept being refused for its whole deadline (the caller may roll back). */
export class StepNotDone extends Error {
  override name = 'StepNotDone';
}

export async function replaceMember(cell: TestCell, victim: string, downMs: number, say: (what: string) => void): Promise<void> {
  const others = cell.names.filter((name) => name !== victim);
  const current = (await listMembers(cell, others)).find((m) => m.name === victim);
  if (current !== undefined) {
    await untilDone(cell, others, `remove ${victim}`, 'DELETE', `/v1/cluster/members/${current.id}`, null);
    say(`removed ${victim} (member ${current.id})`);
  }
  await cell.cell.kill9(victim);
  await sleep(downMs);
  rmSync(cell.cell.dataDirOf(victim), { recursive: true, force: true });
  const body = JSON.stringify({ name: victim, peerUrl: cell.cell.peerUrl(victim), clientUrl: cell.cell.clientUrl(victim) });
  const added = await untilDone(cell, others, `add ${victim}`, 'POST', '/v1/cluster/members', body);
  const id = added.member.id as number;
  say(`added ${victim} as learner ${id}`);
  cell.cell.start(victim, { join: true, via: others });
  try {
    await untilDone(cell, others, `promote ${victim}`, 'POST', `/v1/cluster/members/${id}/promote`, null);
  } catch (error) {
    // A learner that never catches up: say whether its process runs and what it last said.
    const state = cell.cell.isRunning(victim) ? 'running' : 'not running';
    const said = `${(error as Error).message}\n${victim} (${state}) last said:\n${cell.cell.tail(victim, 40)}`;
    throw error instanceof StepNotDone ? new StepNotDone(said) : new Error(said);
  }
  say(`promoted ${victim} (member ${id})`);
}

export async function listMembers(cell: TestCell, via: readonly string[]): Promise<Member[]> {
  const deadline = Date.now() + stepDeadlineMs;
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    const name = via[attempt % via.length] as string;
    try {
      const answer = await http(`${cell.cell.clientUrl(name)}/v1/cluster/members`, { timeoutMs: 5_000 });
      if (answer.status === 200) return answer.body.members as Member[];
    } catch {
      // that member is down or busy: ask another
    }
    await sleep(250);
  }
  // Nobody answered for the whole step: say what each member's process last said.
  const said = via.map((name) => `${name} (${cell.cell.isRunning(name) ? 'running' : 'not running'}) last said:\n${cell.cell.tail(name, 40)}`);
  throw new Error(`membership fault: no member listed the members\n${said.join('\n')}`);
}

/**
 * Sends the change until a member answers it done. Refusals that pass (a change in flight, a
 * learner not yet in sync, no leader, an unknown outcome) are retried, all with one Request-ID:
 * a retry of a change that already took effect must be answered with its outcome (200/201), on
 * whichever member and leader, so anything else (400 "already a member", 404) fails the run.
 */
export async function untilDone(
  cell: TestCell,
  via: readonly string[],
  what: string,
  method: 'POST' | 'DELETE',
  path: string,
  body: string | null,
  deadlineMs = stepDeadlineMs,
): Promise<any> {
  const deadline = Date.now() + deadlineMs;
  const requestId = `membership-fault ${what} ${randomUUID()}`;
  let last = '';
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    const name = via[attempt % via.length] as string;
    if (!cell.cell.isRunning(name)) {
      await sleep(50); // every member asked may be down: never spin
      continue;
    }
    try {
      const answer = await http(`${cell.cell.clientUrl(name)}${path}`, {
        method,
        timeoutMs: 15_000,
        headers: { 'request-id': requestId },
        ...(body === null ? {} : { body }),
      });
      if (answer.status === 200 || answer.status === 201) return answer.body;
      last = `${answer.status} ${JSON.stringify(answer.body)}`;
      if (![412, 429, 503, 504].includes(answer.status)) throw new Error(`membership fault: ${what}: ${last}`);
      // already_voter would mean a retried promote went unrecognized (not in sync is a true wait).
      if (answer.status === 412 && answer.body?.error?.reason === 'already_voter') throw new Error(`membership fault: ${what}: a retried promote was not recognized: ${last}`);
    } catch (error) {
      if (error instanceof Error && error.message.startsWith('membership fault')) throw error;
      last = String(error);
    }
    await sleep(300);
  }
  throw new StepNotDone(`membership fault: ${what} not done within ${deadlineMs} ms (last answer: ${last})`);
}
