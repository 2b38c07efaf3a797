// One data cell of the cells world and the calls actors make to it: a command proposed through a
// member's production driver (the leader when one is known, else any running member, which
// forwards), and a linearizable read of a namespace. What the HTTP edge of a real cell does for
// the control plane's cell-calls.ts and for a router, as calls into the simulated members.
import { ownSpans } from '../../base/namespaces.js';
import { BatonError, OverloadedError, UnavailableError } from '../../base/errors.js';
import type { Random } from '../../base/random.js';
import { chance, pick } from '../../base/random.js';
import { defaultMvccLimits, encodeCommand, type ApplyOutcome, type Command, type KeyValue, type MvccStore } from '../../mvcc/index.js';
import type { SimNode } from '../sim-node.js';
import type { World } from '../world.js';
import type { CellsLoop } from './cells-loop.js';

/** How long an actor waits for one call before taking its outcome as unknown (the driver's is 2 s). */
export const callTimeoutMs = 2_500;

/** One call's outcome as its caller sees it. */
export type CallOutcome =
  | { readonly kind: 'applied'; readonly outcome: ApplyOutcome & { type: 'applied' } }
  /** A definite refusal: the command changed nothing (wrong_cell, landing, a failed check). */
  | { readonly kind: 'refused'; readonly error: BatonError }
  /** Not proposed (no leader known, overloaded): safe to send again. */
  | { readonly kind: 'notSent' }
  /** No answer in time, or the member went down: it may or may not apply. */
  | { readonly kind: 'unknown' };

export interface NamespaceRead {
  readonly revision: number;
  readonly kvs: readonly KeyValue[];
}

export class SimCell {
  constructor(
    readonly id: string,
    readonly world: World,
    private readonly loop: CellsLoop,
    /** Which member a call goes to when the leader is not known (the cell's own fork). */
    private readonly random: Random,
    /**
     * How far this cell's members' wall clocks run ahead of the simulation's (the stamp of every
     * command it proposes): each cell's dedup clock then runs apart from the others', as real
     * cells' do, so Request-ID records moved between them must be re-stamped.
     */
    private readonly clockOffsetMs = 0,
  ) {}

  /** The member a call goes to: mostly the leader, now and then another (which forwards). */
  private member(): SimNode | null {
    const running = this.world.runningNodes().filter((node) => node.serverDriver !== null);
    if (running.length === 0) return null;
    const leader = this.world.leader();
    if (leader !== null && leader.serverDriver !== null && !chance(this.random, 0.1)) return leader;
    return pick(this.random, running);
  }

  /** Proposes `op` once (`requestId`: the client's, kept across its retries). */
  async propose(command: Command | ((store: MvccStore) => Command), requestId: string | undefined): Promise<CallOutcome> {
    const node = this.member();
    const binding = node?.serverDriver ?? null;
    if (node === null || binding === null) return { kind: 'notSent' };
    // A command built from the receiving member's own applied state, as a node's route builds it.
    const store = binding.mvccStore;
    if (typeof command === 'function' && store === null) return { kind: 'notSent' };
    const op = typeof command === 'function' ? command(store as MvccStore) : command;
    const envelope = { proposedAtMs: this.loop.nowMs + this.clockOffsetMs, source: node.id, ...(requestId === undefined ? {} : { requestId }), op };
    const bytes = encodeCommand(envelope, defaultMvccLimits);
    const commandId = this.loop.nextCommandId++;
    const answer = binding.propose(commandId, bytes).then(
      (applied): CallOutcome => {
        const outcome = applied.mvcc;
        if (applied.chain === 0 || outcome === undefined || outcome.type === 'noop') return { kind: 'unknown' };
        if (outcome.type === 'failed') return { kind: 'refused', error: outcome.error };
        return { kind: 'applied', outcome };
      },
      (error: unknown): CallOutcome => {
        this.loop.note(`${this.id} n${node.id} propose: ${String(error)}`);
        // Refused before anything was proposed: no leader known, or too much in flight.
        if (error instanceof OverloadedError) return { kind: 'notSent' };
        if (error instanceof UnavailableError && error.details['leader'] !== undefined) return { kind: 'notSent' };
        return { kind: 'unknown' };
      },
    );
    return Promise.race([answer, this.loop.sleep(callTimeoutMs).then((): CallOutcome => ({ kind: 'unknown' }))]);
  }

  /**
   * Every key of `prefix` at one revision, linearizable: a member confirms its leadership (the
   * driver's ReadIndex), then its store is read. Null: no member could serve it now.
   */
  async readNamespace(prefix: string, nested: readonly string[] = []): Promise<NamespaceRead | null> {
    // The namespace's own keys: those of namespaces nested in it are theirs (ownSpans).
    const read = await this.readStore((store) => ({
      revision: store.revision,
      kvs: nested.length === 0
        ? store.range({ type: 'get', key: prefix, prefix: true }).kvs // any prefix (the control cell's map key too)
        : ownSpans(prefix, nested).flatMap((span) => store.range({ type: 'get', key: span.start, rangeEnd: span.end as Uint8Array }).kvs),
    }));
    return read ?? null;
  }

  /** `read` of a member's store after it confirmed its leadership (ReadIndex); undefined: not served now. */
  async readStore<T>(read: (store: MvccStore) => T): Promise<T | undefined> {
    const node = this.world.leader() ?? this.member();
    const binding = node?.serverDriver ?? null;
    if (node === null || binding === null) return undefined;
    const incarnation = node.incarnation;
    const confirmed = binding.driver.linearizableRead().then(() => true, () => false);
    const ok = await Promise.race([confirmed, this.loop.sleep(callTimeoutMs).then(() => false)]);
    // The member may have crashed since: its store is gone with that incarnation.
    if (!ok || node.incarnation !== incarnation || node.state !== 'running') return undefined;
    const store = node.serverDriver?.mvccStore ?? null;
    if (store === null) return undefined;
    return read(store);
  }
}
