// `baton sim-demo`: a simulated 3-node cell in this process, printing elections, commits, a
// leader crash and the re-election, for a bounded stretch of simulated time.
import { simulate } from '../sim/index.js';
import type { SimEvent } from '../sim/index.js';

export function devCommand(args: readonly string[] = []): number {
  if (args.length > 0) {
    const help = args.includes('--help') || args.includes('-h');
    const usage = 'usage: baton sim-demo\n  A simulated 3-member cell in one process: elections, commits, a leader crash, re-election.';
    (help ? console.log : console.error)(usage);
    return help ? 0 : 2;
  }
  console.log('baton sim-demo: a simulated 3-member cell in one process');
  const result = simulate({
    seed: 7n,
    profile: 'calm',
    scenario: {
      voterCount: 3,
      learnerCount: 0,
      faultPhaseMs: 6_000,
      proposeIntervalMs: 10,
      readIntervalMs: 20,
    },
    script: [
      { atMs: 2_000, fault: 'crashLeader' },
      { atMs: 3_500, fault: 'restartCrashed' },
      { atMs: 4_200, fault: 'isolateLeader' },
      { atMs: 5_200, fault: 'heal' },
    ],
    progressEveryMs: 500,
    onEvent: (event) => console.log(describe(event)),
  });
  const s = result.stats;
  console.log(
    `done at ${result.timeMs} ms simulated: ${s.elections} elections, ${s.acknowledged} writes acknowledged, ` +
      `${s.readsServed} linearizable reads, ${result.violations.length} invariant violations`,
  );
  for (const violation of result.violations)
    console.log(`VIOLATION ${violation.invariant}: ${violation.detail}`);
  return result.violations.length === 0 ? 0 : 1;
}

function describe(event: SimEvent): string {
  const at = `[${String(event.timeMs).padStart(5)} ms]`;
  switch (event.type) {
    case 'leader':
      return `${at} member ${event.member} elected leader of term ${event.term}`;
    case 'crash':
      return `${at} member ${event.member} crashed (unsynced writes lost)`;
    case 'restart':
      return `${at} member ${event.member} restarted from its disk`;
    case 'fault':
      return `${at} ${event.description}`;
    case 'progress':
      return event.leader === 0
        ? `${at} no leader; ${event.acknowledged} writes acknowledged so far`
        : `${at} leader ${event.leader} (term ${event.term}) commit index ${event.commitIndex}, ${event.acknowledged} writes acknowledged`;
  }
}
