// The canary's view of the cell itself: every `everyMs` it asks each endpoint for its own status
// (/v1/cluster/status answers from the member asked) and reports a leader lost (the leader's
// member unreachable, or a member that knows no leader or another one) and an apply that is stuck
// (a member whose applied index stays below its commit index for `stuckMs`). Detection is one
// poll after the change, well inside 3 s at the default 250 ms. A member that answers 401/403
// (authorization on, and the canary's principal may not read the status) is not unreachable: the
// monitor cannot see the leader through it, says so once (`monitor_refused`) and judges nothing
// while any member refuses, rather than report a leader loss that did not happen.

export interface MemberView {
  readonly member: number;
  readonly leader: number;
  readonly commitIndex: number;
  readonly appliedIndex: number;
}

export type MonitorEvent =
  | { readonly event: 'leader_lost'; readonly previous: number; readonly saw: Readonly<Record<string, unknown>> }
  | { readonly event: 'leader_elected'; readonly leader: number; readonly afterMs: number | null }
  | { readonly event: 'apply_stuck'; readonly endpoint: string; readonly commitIndex: number; readonly appliedIndex: number; readonly forMs: number }
  | { readonly event: 'monitor_refused'; readonly endpoint: string; readonly status: number };

/** A member answered the status request with 401 or 403: it is there, but will not tell this principal. */
export class StatusRefused extends Error {
  constructor(readonly status: number) {
    super(`status ${status}: refused to this canary's principal`);
  }
}

/** Throws StatusRefused for 401/403, an Error for any other answer but 200. */
export function checkStatusAnswer(status: number): void {
  if (status === 401 || status === 403) throw new StatusRefused(status);
  if (status !== 200) throw new Error(`status ${status}`);
}

export class CellMonitor {
  private leader = 0;
  private lostAtMs: number | null = null;
  private readonly applied = new Map<string, { index: number; sinceMs: number; reported: boolean }>();
  private timer: NodeJS.Timeout | null = null;
  /** The poll in flight, if any: stop() waits for it. */
  private polling: Promise<void> | null = null;
  private stopped = false;
  /** Whether the last poll was refused by some member (monitor_refused said once per episode). */
  private refused = false;
  leaderKnown = false;

  constructor(
    private readonly endpoints: readonly string[],
    private readonly onEvent: (event: MonitorEvent) => void,
    private readonly options: { everyMs: number; stuckMs: number; fetchStatus?: (endpoint: string) => Promise<MemberView> },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.poll(), this.options.everyMs);
    void this.poll();
  }

  /**
   * Stops polling and waits for the poll in flight, which then judges nothing: the caller closes
   * the transport next, and a request it cuts ("socket hang up") is not a member lost.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.polling;
  }

  private poll(): Promise<void> {
    if (this.polling !== null || this.stopped) return Promise.resolve();
    this.polling = this.pollOnce().finally(() => (this.polling = null));
    return this.polling;
  }

  private async pollOnce(): Promise<void> {
    const views = await Promise.all(this.endpoints.map(async (endpoint) => {
      try {
        return { endpoint, view: await (this.options.fetchStatus ?? fetchStatus)(endpoint) };
      } catch (error) {
        const refused = error instanceof StatusRefused ? error.status : undefined;
        return { endpoint, view: null, error: (error as Error)?.message ?? String(error), refused };
      }
    }));
    if (this.stopped) return;
    const refusing = views.find((v) => v.refused !== undefined);
    if (refusing !== undefined) {
      if (!this.refused) this.onEvent({ event: 'monitor_refused', endpoint: refusing.endpoint, status: refusing.refused as number });
      this.refused = true;
      this.leaderKnown = false;
      return;
    }
    this.refused = false;
    this.checkLeader(views);
    this.checkApply(views);
  }

  private checkLeader(views: readonly { endpoint: string; view: MemberView | null; error?: string }[]): void {
    const reachable = views.filter((v): v is { endpoint: string; view: MemberView } => v.view !== null);
    const leaders = new Set(reachable.map((v) => v.view.leader));
    const leaderReachable = reachable.some((v) => v.view.member === this.leader);
    const agreed = leaders.size === 1 && !leaders.has(0) ? (reachable[0] as { view: MemberView }).view.leader : 0;
    const quorum = reachable.length * 2 > views.length;
    if (this.leader !== 0 && (!leaderReachable || agreed !== this.leader)) {
      const saw = Object.fromEntries(views.map((v) => [v.endpoint, v.view === null ? `unreachable: ${v.error}` : { member: v.view.member, leader: v.view.leader }]));
      this.onEvent({ event: 'leader_lost', previous: this.leader, saw });
      this.leader = 0;
      this.leaderKnown = false;
      this.lostAtMs = performance.now();
    }
    if (this.leader === 0 && agreed !== 0 && quorum && reachable.some((v) => v.view.member === agreed)) {
      this.leader = agreed;
      this.leaderKnown = true;
      this.onEvent({ event: 'leader_elected', leader: agreed, afterMs: this.lostAtMs === null ? null : Math.round(performance.now() - this.lostAtMs) });
      this.lostAtMs = null;
    }
    // Also after a refused spell, which knew nothing of the leader it kept.
    this.leaderKnown = this.leader !== 0;
  }

  private checkApply(views: readonly { endpoint: string; view: MemberView | null }[]): void {
    const now = performance.now();
    for (const { endpoint, view } of views) {
      if (view === null) continue;
      const last = this.applied.get(endpoint);
      if (last === undefined || last.index !== view.appliedIndex || view.appliedIndex >= view.commitIndex) {
        this.applied.set(endpoint, { index: view.appliedIndex, sinceMs: now, reported: false });
        continue;
      }
      if (!last.reported && now - last.sinceMs >= this.options.stuckMs) {
        last.reported = true;
        this.onEvent({ event: 'apply_stuck', endpoint, commitIndex: view.commitIndex, appliedIndex: view.appliedIndex, forMs: Math.round(now - last.sinceMs) });
      }
    }
  }
}

async function fetchStatus(endpoint: string): Promise<MemberView> {
  const res = await fetch(`${endpoint}/v1/cluster/status`, { signal: AbortSignal.timeout(1500) });
  checkStatusAnswer(res.status);
  return await res.json() as MemberView;
}
