// npm run faults -- --time 60 --seed S [--members 3|5] [--clients 5] [--lease-clients 3]
//   [--lock-clients 3] [--keys 3] [--kinds kill,pause,...] [--first grow-first,...]
//   [--clock-jump-max-ms N] [--reads serializable]
//   (--kinds: the kinds the seed draws from; --first: faults injected first, in order, then the
//   seeded draw; `--kinds grow-first` forces grow-first cycles only)
//   [--fencing off]  (self-test: the resource accepts stale tokens, which must be reported)
//   [--leases overclaim]  (self-test: the history claims 3x the TTL; expiries must be reported)
//   [--history FILE]  (the raw events, one JSON line each)
// npm run faults -- --cells 2 --time 60 --seed S [--clients 5] [--keys 3] [--kinds router-kill,...]
//   (namespaces moved back and forth between cells behind a router: cells-run.ts, cells-main.ts)
// Prints the summary (operations, faults by kind, each checker's verdict or its minimal failing
// sub-history) and exits 1 on a violation, 2 when a checker could not decide.
import { writeFileSync } from 'node:fs';
import { runFaults } from './runner.js';
import { faultKinds, type FaultKind } from './nemesis.js';

function flag(name: string, fallback: string): string {
  const args = process.argv.slice(2);
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] !== undefined ? (args[at + 1] as string) : fallback;
}

function kindsFlag(name = 'kinds'): FaultKind[] | undefined {
  const text = flag(name, '');
  if (text === '') return undefined;
  const kinds = text.split(',');
  for (const kind of kinds) {
    if (!(faultKinds as readonly string[]).includes(kind)) throw new Error(`unknown fault kind ${kind}; known: ${faultKinds.join(',')}`);
  }
  return kinds as FaultKind[];
}

if (flag('cells', '1') !== '1') {
  const { cellsMain } = await import('./cells-main.js');
  process.exitCode = await cellsMain(flag);
} else await oneCellMain();

async function oneCellMain(): Promise<void> {
  const seed = BigInt(flag('seed', String(Date.now() % 100_000)));
  const timeS = Number(flag('time', '60'));
  const members = Number(flag('members', '3'));
  if (members !== 3 && members !== 5) throw new Error('--members is 3 or 5');
  const kinds = kindsFlag();
  const first = kindsFlag('first');
  const clockJumpMaxMs = flag('clock-jump-max-ms', '');
  const summary = await runFaults({
    seed,
    timeS,
    members,
    clients: Number(flag('clients', '5')),
    leaseClients: Number(flag('lease-clients', '3')),
    lockClients: Number(flag('lock-clients', '3')),
    keys: Number(flag('keys', '3')),
    reads: flag('reads', 'linearizable') === 'serializable' ? 'serializable' : 'linearizable',
    fencing: flag('fencing', 'on') === 'off' ? 'off' : 'on',
    leases: flag('leases', 'honest') === 'overclaim' ? 'overclaim' : 'honest',
    ...(kinds !== undefined ? { kinds } : {}),
    ...(first !== undefined ? { first } : {}),
    ...(clockJumpMaxMs !== '' ? { clockJumpMaxMs: Number(clockJumpMaxMs) } : {}),
    onHistory: (events) => {
      const path = flag('history', '');
      if (path !== '') writeFileSync(path, events.map((e) => JSON.stringify(e)).join('\n') + '\n');
    },
  });
  console.log(`faults run: seed ${seed}, ${timeS} s, ${members} members`);
  for (const line of summary.lines) console.log(line);
  const extra = process.argv.slice(2).filter((a, i, all) => !['--time', '--seed'].includes(a) && !['--time', '--seed'].includes(all[i - 1] ?? ''));
  const rerun = `npm run faults -- --time ${timeS} --seed ${seed} ${extra.join(' ')}`.trim();
  if (summary.verdict === 'ok') console.log('result: ok');
  else console.log(`result: ${summary.verdict.toUpperCase()} (run the scenario again: ${rerun})`);
  process.exitCode = summary.verdict === 'ok' ? 0 : summary.verdict === 'violation' ? 1 : 2;
}
