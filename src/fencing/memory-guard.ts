// A fencing guard in memory: for a resource that lives in the same process (or tests).
import { InvalidArgumentError } from '../base/errors.js';
import type { FencingGuard, FencingVerdict } from './types.js';

export class MemoryFencingGuard implements FencingGuard {
  private readonly tokens = new Map<string, number>();
  readonly counts = { accepted: 0, rejected: 0 };

  check(resource: string, token: number): FencingVerdict {
    validToken(token);
    const highest = this.tokens.get(resource) ?? 0;
    if (token < highest) {
      this.counts.rejected++;
      return { accepted: false, token, highest };
    }
    this.tokens.set(resource, token);
    this.counts.accepted++;
    return { accepted: true, token };
  }

  highest(resource: string): number {
    return this.tokens.get(resource) ?? 0;
  }
}

export function validToken(token: number): void {
  if (!Number.isSafeInteger(token) || token < 1) {
    throw new InvalidArgumentError(`a fencing token is a positive integer, not ${String(token)}`);
  }
}
