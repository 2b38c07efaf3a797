// Assertions catch programmer errors and stay on in production: a failed one stops the node,
// which restarts from its WAL, rather than act on a broken invariant. Never catch AssertionError.
export class AssertionError extends Error {
  override name = 'AssertionError';
}

export function assert(condition: boolean, message = 'assertion failed'): asserts condition {
  if (!condition) throw new AssertionError(message);
}

export function unreachable(value: never, what = 'value'): never {
  throw new AssertionError(`unexpected ${what}: ${String(value)}`);
}
