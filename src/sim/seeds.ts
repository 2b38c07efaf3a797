// Which seeds a test runs: BATON_SEED (one seed) or BATON_SEEDS (a count from a start) when set,
// else the test's own list. The environment is passed in, so the sim never touches `process`.

export interface SeedsToRunOptions {
  /** The seeds to run when the environment does not choose. */
  readonly fallback: readonly bigint[];
  readonly env: Readonly<Record<string, string | undefined>>;
}

export function seedsToRun(options: SeedsToRunOptions): bigint[] {
  const one = options.env['BATON_SEED'];
  if (one !== undefined && one !== '') return [parseSeed(one)];
  const count = options.env['BATON_SEEDS'];
  if (count !== undefined && count !== '') {
    const start = parseSeed(options.env['BATON_SEED_START'] ?? '1');
    return Array.from({ length: Number(count) }, (_, i) => start + BigInt(i));
  }
  return [...options.fallback];
}

/** A seed as printed by the sim: decimal or 0x-hex. */
export function parseSeed(text: string): bigint {
  const trimmed = text.trim();
  if (!/^(0x[0-9a-f]+|\d+)$/i.test(trimmed)) throw new RangeError(`not a seed: ${text}`);
  return BigInt(trimmed);
}

/** Seeds first..first+count-1. */
export function seedRange(first: bigint, count: number): bigint[] {
  return Array.from({ length: count }, (_, i) => first + BigInt(i));
}
