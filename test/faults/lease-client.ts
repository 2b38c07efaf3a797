// The lease workload: each lease process grants a lease (5 s TTL), attaches one key of its own to
// it, keeps it alive for a while (renewing and reading the key), then abandons it: it stops
// renewing, waits past the TTL and checks that the lease and its key are gone. Everything goes
// into the history for the lease checker (src/check/lease-check.ts): a renewed lease's key must
// never vanish, an expired lease's key must be gone. Keys live outside the kv workload's prefix.
import { SeededRandom, randomInt } from '../../src/base/random.js';
import type { BatonClient } from '../../src/client/index.js';
import type { LockResult } from '../../src/check/index.js';
import { sleep } from '../cluster/harness.js';
import { recorded, type Recorder } from './kv-client.js';

export const leaseTtlMs = 5_000;
export const leasePrefix = '/faults-lease/';

export interface LeaseLoopOptions {
  readonly recorder: Recorder;
  readonly process: number;
  readonly client: BatonClient;
  readonly deadline: number;
  readonly seed: bigint;
  /**
   * The TTL written into the history (default: the real one). Three times the real TTL is the
   * lease checker's self-test: an abandoned lease's key then vanishes inside its claimed life.
   */
  readonly claimedTtlMs?: number;
}

export async function leaseLoop(options: LeaseLoopOptions): Promise<void> {
  const { recorder, process, client } = options;
  const claimedTtlMs = options.claimedTtlMs ?? leaseTtlMs;
  const random = new SeededRandom(options.seed * 7_919n + BigInt(process));
  // A lease's life is bounded (hold + TTL + slack), so stop starting new ones near the end.
  for (let n = 0; n < 10_000 && recorder.now() < options.deadline - leaseTtlMs; n++) {
    const granted = await recorded<LockResult>(recorder, process, { type: 'lease-grant', ttlMs: claimedTtlMs }, async () => {
      const grant = await client.leaseGrant(leaseTtlMs / 1000);
      return { type: 'lease-grant', leaseId: String(grant.id) };
    });
    if (granted.type !== 'ok' || granted.result.type !== 'lease-grant') {
      await sleep(200);
      continue;
    }
    const leaseId = granted.result.leaseId;
    const key = `${leasePrefix}p${process}-${n}`;
    const value = `p${process}-${n}`;
    const put = await recorded<LockResult>(recorder, process, { type: 'lease-put', key, value, leaseId }, async () => {
      await client.put(key, value, { lease: Number(leaseId) });
      return { type: 'lease-put' };
    });
    if (put.type === 'fail') continue;
    // Keep it: renew every ~TTL/4 and read the key in between, for 0-10 s.
    const holdUntil = recorder.now() + randomInt(random, 0, 10_000);
    while (recorder.now() < holdUntil) {
      await keepalive(recorder, process, client, leaseId, claimedTtlMs);
      await read(recorder, process, client, key);
      await sleep(randomInt(random, 300, leaseTtlMs / 4));
    }
    // Abandon it: no more renewals. Read now and then while it runs out, then check it is gone.
    const giveUpAt = recorder.now();
    while (recorder.now() < giveUpAt + leaseTtlMs + 2_000) {
      await sleep(randomInt(random, 500, 1_500));
      await read(recorder, process, client, key);
    }
    for (let attempt = 0; attempt < 5; attempt++) {
      const answer = await keepalive(recorder, process, client, leaseId, claimedTtlMs);
      if (answer.type === 'ok') break;
      await sleep(300);
    }
    await read(recorder, process, client, key);
  }
}

function keepalive(recorder: Recorder, process: number, client: BatonClient, leaseId: string, ttlMs: number) {
  return recorded<LockResult>(recorder, process, { type: 'lease-keepalive', leaseId, ttlMs }, async () => {
    const answer = await client.leaseKeepalive([Number(leaseId)]);
    const item = answer.leases.find((lease) => String(lease.id) === leaseId);
    if (item === undefined) throw new Error(`keepalive answer without lease ${leaseId}`);
    return { type: 'lease-keepalive', expired: 'error' in item };
  });
}

function read(recorder: Recorder, process: number, client: BatonClient, key: string) {
  return recorded<LockResult>(recorder, process, { type: 'lease-read', key }, async () => {
    const kv = await client.getValue(key);
    return { type: 'lease-read', value: kv?.value ?? null };
  });
}
