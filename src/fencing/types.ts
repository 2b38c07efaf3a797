// The downstream fencing guard: the protected resource keeps the highest fencing token it has
// accepted per resource and rejects lower ones. Without this check at the resource, a lock cannot
// make effects exclusive: a paused or partitioned former owner would write with its old token.

export type FencingVerdict =
  | { readonly accepted: true; readonly token: number }
  /** `highest` is the token that made this one stale. */
  | { readonly accepted: false; readonly token: number; readonly highest: number };

export interface FencingGuard {
  /**
   * Atomically: accept `token` for `resource` if it is at least the highest accepted so far (the
   * same holder may write many times with its token), remembering it; otherwise reject it.
   */
  check(resource: string, token: number): FencingVerdict;
  /** The highest token accepted for `resource` (0 when none). */
  highest(resource: string): number;
  /**
   * Checks answered since this guard opened: `rejected` counts stale tokens refused (a former
   * owner that tried to write), for the resource's own metrics; it should stay rare.
   */
  readonly counts: { readonly accepted: number; readonly rejected: number };
}
