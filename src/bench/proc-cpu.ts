// CPU time of server processes from /proc (Linux), so a bench can report CPU per operation for
// each system: on a 2-core machine shared by client and servers, that is what decides throughput.
import { readdirSync, readFileSync } from 'node:fs';

const clockTicksPerSecond = 100; // USER_HZ: 100 on every mainstream Linux build

/** Pids of processes whose command line contains `marker` (e.g. a bench's unique temp dir). */
export function findPids(marker: string): number[] {
  const pids: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return pids;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes(marker)) pids.push(Number(entry));
    } catch {
      // The process ended while we looked: skip it.
    }
  }
  return pids;
}

/** User + system CPU seconds used so far by these processes (all threads); gone ones count 0. */
export function cpuSeconds(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // Gone.
    }
  }
  return ticks / clockTicksPerSecond;
}
