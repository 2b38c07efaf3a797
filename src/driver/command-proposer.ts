// The node's one write path: a command is stamped (Request-ID, the proposer's clock and member id),
// encoded, framed and replicated by the driver, and answered with the result its own type calls
// for. A state machine that answers a command of one kind with a result of another is a bug, so
// that is an assertion here instead of a check (and a 500) in every service.
import { assert } from '../base/assert.js';
import type { BatonError } from '../base/errors.js';
import type { ProposeOptions } from './driver.js';
import { encodeCommand, type ApplyOutcome, type Command, type CommandProposer, type MvccLimits, type Origin, type Proposed } from '../mvcc/index.js';

/** What the proposer needs from the driver (NodeDriver, or the simulator's member binding). */
export interface ProposalLog {
  newProposalId(): Uint8Array;
  propose(proposalId: Uint8Array, command: Uint8Array, options?: ProposeOptions): Promise<ApplyOutcome>;
}

export interface LogProposerOptions {
  /** The member id lets the dedup clock follow this member's clock by its steps only. */
  readonly memberId?: number;
  readonly limits: MvccLimits;
  readonly wallMs: () => number;
  readonly monotonicMs: () => number;
  /** Proposal to apply, seconds (the node's histogram). */
  readonly onProposed?: (seconds: number) => void;
  /** A proposal that got no outcome (no leader, overloaded, timed out): etcd's proposals_failed_total. */
  readonly onFailed?: () => void;
  /** A command the state machine refused (its outcome an error), heard by the member answering it (#28's rejections). */
  readonly onRefused?: (error: BatonError) => void;
  /**
   * The proposing member's authorization check (src/auth's guard): a refused write costs no log
   * entry and is refused also without a leader. Apply decides again, on the state it applies on.
   * The Request-ID lets a retry of a request already applied through (apply answers it from its
   * record).
   */
  readonly admit?: (origin: Origin, op: Command, requestId: string | undefined) => BatonError | null;
  /**
   * What must be durable before `op` is answered (the audit log's record of an audited change):
   * a promise to wait for, or null (every other command: no wait, no allocation).
   */
  readonly beforeAnswer?: (op: Command) => Promise<void> | null;
  /** The client's source address of the request being served (the audit log's records), if any. */
  readonly sourceAddress?: () => string | undefined;
}

export class LogProposer implements CommandProposer {
  constructor(
    private readonly log: ProposalLog,
    private readonly options: LogProposerOptions,
  ) {}

  /** Not an async function: one closure and one promise per write instead of an async frame. */
  propose<C extends Command>(op: C, requestId: string | undefined, origin: Origin, options?: ProposeOptions): Promise<Proposed<C>> {
    const { memberId, limits, wallMs, monotonicMs, onProposed, onFailed, onRefused, admit, beforeAnswer, sourceAddress } = this.options;
    let command: Uint8Array;
    try {
      const refused = admit?.(origin, op, requestId) ?? null;
      if (refused !== null) return Promise.reject(refused);
      const address = origin === undefined ? undefined : sourceAddress?.();
      command = encodeCommand({
        requestId, proposedAtMs: wallMs(), source: memberId, ...(origin === undefined ? {} : { principal: origin }),
        ...(address === undefined ? {} : { address }), op,
      }, limits);
    } catch (error) {
      return Promise.reject(error);
    }
    const started = monotonicMs();
    return this.log.propose(this.log.newProposalId(), command, options).then((outcome) => {
      onProposed?.((monotonicMs() - started) / 1000);
      if (outcome.type === 'failed') onRefused?.(outcome.error);
      const wait = beforeAnswer?.(op) ?? null;
      return wait === null ? answerOf(op, outcome) : wait.then(() => answerOf(op, outcome));
    }, (error: unknown) => {
      onFailed?.();
      throw error;
    });
  }
}

/** The answer to `op` from its entry's outcome: its result, or the error it failed with. */
export function answerOf<C extends Command>(op: C, outcome: ApplyOutcome): Proposed<C> {
  if (outcome.type === 'failed') throw outcome.error;
  assert(outcome.type === 'applied', `a command entry is never applied as ${outcome.type}`);
  assert(outcome.result.type === op.type, `a ${op.type} command was answered with a ${outcome.result.type} result`);
  return { result: outcome.result as Proposed<C>['result'], duplicate: outcome.duplicate };
}
