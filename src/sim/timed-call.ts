// A simulated client's call with its own timeout: a member that crashed never answers. Exactly
// one of the two continuations runs, at most once; `failed(null)` means no answer in time.
import type { World } from './world.js';

export function timedCall<T>(
  world: World,
  promise: Promise<T>,
  timeoutMs: number,
  ok: (value: T) => void,
  failed: (error: unknown) => void,
): { readonly settledByAnswer: boolean } {
  const state = { settled: false, settledByAnswer: false };
  world.at(world.nowMs + timeoutMs, '', () => {
    if (state.settled) return;
    state.settled = true;
    failed(null);
  });
  promise.then(
    (value) => {
      if (state.settled) return;
      state.settled = state.settledByAnswer = true;
      ok(value);
    },
    (error: unknown) => {
      if (state.settled) return;
      state.settled = state.settledByAnswer = true;
      failed(error);
    },
  );
  return state;
}
