// The seed draws the scenario: cluster shape, network and disk behaviour, fault mix and rates,
// workload. Calm runs exist so the happy path is covered too, but most runs are hostile.
import type { Random } from '../base/random.js';
import { chance, pick, randomInt } from '../base/random.js';
import type { FaultWeights, Scenario } from './types.js';

export function drawScenario(random: Random, profileOverride?: Scenario['profile']): Scenario {
  const roll = randomInt(random, 0, 99);
  const profile = profileOverride ?? (roll < 10 ? 'calm' : roll < 70 ? 'mixed' : 'chaos');
  const chaos = profile === 'chaos';
  const calm = profile === 'calm';
  const rate = (max: number): number => (calm ? 0 : randomInt(random, 0, max * 1000) / 1000);
  const networkDelayMsMin = randomInt(random, 1, 3);
  // Fast, ordinary and slow disks: a slow disk keeps writes in progress long enough to tear.
  const diskLatencyMsMin = randomInt(random, 0, 2);
  const diskLatencyMsSpread = pick(random, [1, 6, 20]);
  const weight = (): number => (calm ? 0 : randomInt(random, chaos ? 1 : 0, 3));
  const faultWeights: FaultWeights = {
    partition: weight(),
    crash: weight(),
    pause: weight(),
    membership: weight(),
    transfer: weight(),
  };
  return {
    voterCount: chance(random, 0.5) ? 3 : 5,
    learnerCount: chance(random, 0.3) ? 1 : 0,
    profile,
    tickMsMin: randomInt(random, 9, 10),
    tickMsMax: randomInt(random, 10, 11),
    networkDelayMsMin,
    networkDelayMsMax: networkDelayMsMin + randomInt(random, 0, 15),
    lossRate: rate(chaos ? 0.2 : 0.05),
    duplicateRate: rate(chaos ? 0.1 : 0.03),
    reorderRate: rate(chaos ? 0.2 : 0.05),
    diskLatencyMsMin,
    diskLatencyMsMax: diskLatencyMsMin + randomInt(random, 0, diskLatencyMsSpread),
    tornWriteRate: rate(0.5),
    faultIntervalMs: calm ? 1_000_000 : randomInt(random, chaos ? 40 : 150, chaos ? 200 : 600),
    faultWeights,
    leaderChurnRate: rate(chaos ? 0.6 : 0.2),
    compactEveryEntries: pick(random, [8, 30, 100, 400]),
    proposeIntervalMs: randomInt(random, 2, 30),
    proposeBatchMin: 1,
    proposeBatchMax: pick(random, [1, 2, 4, 16]),
    forwardRate: 0.2,
    clientOutstandingMax: 256,
    readIntervalMs: randomInt(random, 5, 50),
    keyCount: randomInt(random, 1, 5),
    faultPhaseMs: randomInt(random, 1000, 5000),
    inflightMessagesMax: pick(random, [1, 4, 256]),
    appendBytesMax: pick(random, [64, 1024, 1024 * 1024]),
    applyBytesMax: pick(random, [64, 4 * 1024 * 1024]),
    uncommittedBytesMax: pick(random, [512, 64 * 1024 * 1024, 64 * 1024 * 1024]),
    electionTicks: pick(random, [5, 10, 10, 20]),
    heartbeatTicks: pick(random, [1, 1, 2]),
    preVote: !chance(random, 0.15),
    checkQuorum: !chance(random, 0.15),
    durableStateMachine: chance(random, 0.5),
  };
}
