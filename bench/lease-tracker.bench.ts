// The leader's expiry tracker alone, in-process on a simulated clock: N leases renewed every
// period in keepalive calls of 100 IDs, the expiry pass every tick and the checkpoint pass every
// 500 ms, as the lease service drives it. Reports CPU per renewal and the longest single call of
// each kind: a long call is a pause of the leader's event loop, which every put waiting behind it
// sees as latency (the put p99 with renewals). CPU time, not wall time, so it holds on a shared
// machine; run it twice and compare the medians.
//
//   node --expose-gc dist/bench/lease-tracker.bench.js [--leases 100000] [--seconds 120] [--tracker PATH]
//   (--tracker: another build's dist/src/lease/index.js, to compare with an older tracker)
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import type { LeaseExpiryTracker as Tracker, ExpiryTrackerOptions } from '../src/lease/index.js';
import { defaultLeaseServiceOptions } from '../src/lease/lease-config.js';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    leases: { type: 'string' },
    seconds: { type: 'string' },
    'period-ms': { type: 'string' },
    tracker: { type: 'string' },
  },
  strict: true,
});
const leaseCount = Number(values.leases ?? 100_000);
const simulatedSeconds = Number(values.seconds ?? 120);
const periodMs = Number(values['period-ms'] ?? 10_000);
const ttlMs = 30_000;
const perCall = 100;
const tickMs = 100;
const checkpointIntervalMs = 500;

const module = (values.tracker === undefined
  ? await import('../src/lease/index.js')
  : await import(pathToFileURL(values.tracker).href)) as { LeaseExpiryTracker: new (options: ExpiryTrackerOptions) => Tracker };

interface Timed {
  calls: number;
  cpuUs: number;
  longestUs: number;
}
const timed = (): Timed => ({ calls: 0, cpuUs: 0, longestUs: 0 });
/** CPU time of the call (getrusage), so that being descheduled on a busy machine does not count. */
function time<T>(into: Timed, body: () => T): T {
  const started = process.cpuUsage();
  const result = body();
  const used = process.cpuUsage(started);
  const us = used.user + used.system;
  into.calls++;
  into.cpuUs += us;
  into.longestUs = Math.max(into.longestUs, us);
  return result;
}

const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
const heapBefore = process.memoryUsage().heapUsed;
// The server's settings (an older tracker ignores options it does not know).
const tracker = new module.LeaseExpiryTracker(defaultLeaseServiceOptions.tracker);
const startMs = 1_000_000.25; // a monotonic clock with fractions, like performance.now()
for (let id = 1; id <= leaseCount; id++) tracker.granted(id, ttlMs, startMs + (id % 1000) / 3);

const renewals = timed();
const expiries = timed();
const checkpoints = timed();
const calls = leaseCount / perCall;
const cpuStart = process.cpuUsage();
let nextCheckpointMs = startMs + checkpointIntervalMs;
let renewed = 0;
let expired = 0;
for (let now = startMs; now < startMs + simulatedSeconds * 1000; now += tickMs) {
  // The calls whose slot falls in this tick (staggered over the period, as independent clients).
  const first = Math.floor((((now - startMs) % periodMs) / periodMs) * calls);
  const last = Math.floor((((now - startMs) % periodMs + tickMs) / periodMs) * calls);
  for (let call = first; call < last; call++) {
    time(renewals, () => {
      for (let id = call * perCall + 1; id <= (call + 1) * perCall; id++) if (tracker.renew(id, now + (id % 7) / 3) !== null) renewed++;
    });
  }
  expired += time(expiries, () => tracker.expired(now)).length;
  if (now >= nextCheckpointMs) {
    nextCheckpointMs += checkpointIntervalMs;
    time(checkpoints, () => tracker.checkpoints(now));
  }
}
const cpu = process.cpuUsage(cpuStart);
gc?.();
const heapBytesPerLease = (process.memoryUsage().heapUsed - heapBefore) / leaseCount;
const row = (name: string, t: Timed): string =>
  `${name}: ${t.calls} calls, longest ${(t.longestUs / 1000).toFixed(2)} ms, mean ${(t.cpuUs / Math.max(1, t.calls)).toFixed(1)} µs`;
console.log(`${leaseCount} leases renewed every ${periodMs / 1000} s for ${simulatedSeconds} simulated s (${values.tracker ?? 'this build'})`);
console.log(`  ${renewed} renewals, ${expired} expired, process CPU ${(((cpu.user + cpu.system) / Math.max(1, renewed))).toFixed(3)} µs per renewal`);
console.log(`  ${row('renew calls (100 IDs)', renewals)}`);
console.log(`  ${row('expiry passes', expiries)}`);
console.log(`  ${row('checkpoint passes', checkpoints)}`);
console.log(`  heap after GC: ${heapBytesPerLease.toFixed(0)} bytes per lease`);
