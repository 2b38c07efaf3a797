// ReadIndex, batched: a leader answers a linearizable read with its commit index once a quorum
// has confirmed, by answering a heartbeat round sent AFTER the read arrived, that it still leads.
// Reads that arrive while a round is in flight share the next round, so one quorum round serves
// any number of reads and at most one round is in flight.
import { assert } from '../base/assert.js';
import { committedIndex } from './quorum.js';
import type { ConfState, MemberId } from './types.js';

export interface PendingRead {
  readonly context: number;
  /** Who asked: this member (local read) or a follower that forwarded it. */
  readonly from: MemberId;
  readonly index: number;
  readonly round: number;
}

export class ReadIndexTracker {
  // Invariant: roundConfirmed <= roundStarted.
  roundStarted = 0;
  roundConfirmed = 0;
  private pending: PendingRead[] = [];
  private readonly ackedRound = new Map<MemberId, number>();

  /** Queue a read at `index`. Returns the round to broadcast now, or 0 if one is in flight. */
  add(context: number, from: MemberId, index: number): number {
    const newest = this.pending[this.pending.length - 1];
    assert(newest === undefined || newest.index <= index, 'read indexes never go back (the commit index only grows)');
    assert(this.roundConfirmed <= this.roundStarted, 'a confirmed round was started');
    const inFlight = this.roundStarted > this.roundConfirmed;
    // A round already in flight was sent before this read arrived: it cannot vouch for it.
    const round = this.roundStarted + 1;
    this.pending.push({ context, from, index, round });
    if (inFlight) return 0;
    this.roundStarted = round;
    return round;
  }

  ack(from: MemberId, round: number): void {
    if (round <= 0 || round > this.roundStarted) return;
    if ((this.ackedRound.get(from) ?? 0) < round) this.ackedRound.set(from, round);
  }

  /** Reads confirmed by a quorum; the leader itself has acknowledged every round it started. */
  confirmed(conf: ConfState, self: MemberId): PendingRead[] {
    const round = committedIndex(conf, (id) =>
      id === self ? this.roundStarted : (this.ackedRound.get(id) ?? 0),
    );
    if (round <= this.roundConfirmed) return [];
    assert(round <= this.roundStarted, 'a confirmed round was started');
    this.roundConfirmed = round;
    const done = this.pending.filter((read) => read.round <= round);
    this.pending = this.pending.filter((read) => read.round > round);
    assert(this.pending.every((read) => read.round === this.roundStarted + 1 || read.round === this.roundStarted),
      'reads still waiting belong to the round in flight or the next');
    return done;
  }

  /** After a round is confirmed: the round to start for reads still waiting, or 0. */
  nextRound(): number {
    assert(this.roundConfirmed <= this.roundStarted, 'a confirmed round was started');
    if (this.pending.length === 0 || this.roundStarted > this.roundConfirmed) return 0;
    this.roundStarted++;
    return this.roundStarted;
  }

  /** Leadership ended: every pending read fails. */
  drain(): PendingRead[] {
    const all = this.pending;
    this.pending = [];
    this.ackedRound.clear();
    this.roundStarted = 0;
    this.roundConfirmed = 0;
    return all;
  }
}
