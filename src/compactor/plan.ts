// What an automatic compaction proposes, decided in pure code (auto-compactor.ts only acts on it).
// Periodic mode follows etcd 3.4's v3compactor: it samples the revision every tenth of the
// retention (of an hour at most), and compacts to the revision seen a retention ago, at most once
// per retention (per hour at most). Revision mode compacts to `revision - retention`.
// Invariant: a proposed revision is above the compact revision and below the current revision,
// so no proposal is refused as compacted (a wasted entry) and the newest revision stays readable.
import { assert } from '../base/assert.js';

const hourMs = 3_600_000;
/** etcd's retryDivisor: samples (and retries) per retention period. */
const samplesPerPeriod = 10;

export interface RevisionSample {
  readonly atMs: number;
  readonly revision: number;
}

export interface PeriodicSchedule {
  /** How often the revision is sampled, and a failed or early compaction asked again. */
  readonly sampleEveryMs: number;
  /** The least time between two compactions. */
  readonly compactEveryMs: number;
}

/** etcd 3.4's schedule: a retention over an hour still compacts hourly (keeping the retention). */
export function periodicSchedule(retentionMs: number): PeriodicSchedule {
  assert(Number.isFinite(retentionMs) && retentionMs > 0, 'a periodic retention is positive');
  const compactEveryMs = Math.min(retentionMs, hourMs);
  // Rounded up: ten samples then span at least the retention.
  const sampleEveryMs = Math.max(1, Math.ceil(compactEveryMs / samplesPerPeriod));
  assert(sampleEveryMs <= compactEveryMs);
  return { sampleEveryMs, compactEveryMs };
}

/**
 * Appends a sample and drops those no later decision needs: every sample older than the newest
 * one at least `retentionMs` old (that one is the candidate; later ones replace it).
 */
export function addSample(
  samples: readonly RevisionSample[],
  sample: RevisionSample,
  retentionMs: number,
): RevisionSample[] {
  const last = samples.at(-1);
  assert(last === undefined || sample.atMs >= last.atMs, 'samples are taken in time order');
  const next = [...samples, sample];
  const candidateAt = newestTakenBy(next, sample.atMs - retentionMs);
  return candidateAt <= 0 ? next : next.slice(candidateAt);
}

/** The revision seen `retentionMs` ago: the newest sample at least that old, if any is. */
export function periodicCandidate(
  samples: readonly RevisionSample[],
  nowMs: number,
  retentionMs: number,
): number | undefined {
  const at = newestTakenBy(samples, nowMs - retentionMs);
  return at < 0 ? undefined : samples[at]?.revision;
}

/** The revision `retentionRevisions` behind the current one, if there is one. */
export function revisionCandidate(
  revision: number,
  retentionRevisions: number,
): number | undefined {
  assert(Number.isSafeInteger(retentionRevisions), 'a revision retention is a count');
  assert(retentionRevisions > 0, 'a revision retention is positive (0 is off, never started)');
  const candidate = revision - retentionRevisions;
  return candidate >= 1 ? candidate : undefined;
}

export type CompactionDecision =
  /** Nothing is old enough yet: ask again at the next tick. */
  | { readonly type: 'wait' }
  /** The compaction point is already at or past the candidate (etcd counts that as done). */
  | { readonly type: 'covered' }
  | { readonly type: 'propose'; readonly revision: number };

/** Bounds a candidate by the store: above the compact revision, below the current revision. */
export function decideCompaction(
  candidate: number | undefined,
  store: { readonly revision: number; readonly compactRevision: number },
): CompactionDecision {
  assert(store.compactRevision <= store.revision, 'the compact point is never past the revision');
  if (candidate === undefined) return { type: 'wait' };
  // A sample can be the current revision (no writes since): keep that one revision readable.
  const revision = Math.min(candidate, store.revision - 1);
  if (revision <= store.compactRevision) return { type: 'covered' };
  assert(revision > store.compactRevision && revision < store.revision);
  return { type: 'propose', revision };
}

/** Index of the newest sample taken at or before `atMs`; -1 when none was. */
function newestTakenBy(samples: readonly RevisionSample[], atMs: number): number {
  for (let i = samples.length - 1; i >= 0; i--) {
    if ((samples[i] as RevisionSample).atMs <= atMs) return i;
  }
  return -1;
}
