// Passwords and tokens for users (etcd's Auth API, docs/design/authorization.md). A password is
// kept as scrypt(password, salt) and checked only by Authenticate, which is bounded in flight so
// password guessing cannot eat the event loop's threadpool (etcd #11826 paid bcrypt per request).
// A token is `name.epoch.expiresAtMs.mac`, the MAC an HMAC-SHA256 with the key in the replicated
// policy: every member verifies every token (no per-member token table to lose on a restart, etcd
// #13134), and only that user's epoch (moved by a password change) or its removal invalidates it,
// not a change of some role elsewhere (etcd #13300).
import { createHmac, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { OverloadedError, UnauthenticatedError } from '../base/errors.js';
import type { Policy } from '../auth/index.js';

/** etcd's --auth-token-ttl default: a client authenticates again after it. */
export const tokenTtlMs = 300_000;
/** Authenticate calls hashing at once on a member; more are refused (overloaded), not queued. */
export const authenticationsInFlightMax = 4;
/** scrypt's cost: ~40 ms of one core per password check on this machine kind. */
const scryptCost = { N: 16_384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
const hashBytes = 32;

export function newSalt(): string {
  return randomBytes(16).toString('base64');
}

export function newTokenKey(): string {
  return randomBytes(32).toString('base64');
}

export function hashPassword(password: string, salt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    scrypt(password, Buffer.from(salt, 'base64'), hashBytes, scryptCost, (error, key) => (error === null ? resolve(key.toString('base64')) : reject(error)));
  });
}

export class AuthTokens {
  private inFlight = 0;

  constructor(
    /** The policy this member has applied (src/auth's guard). */
    private readonly policy: () => Policy,
    private readonly nowMs: () => number = () => Date.now(),
  ) {}

  /** The user's token if `password` is its password; null otherwise (no user, no password, wrong one). */
  async authenticate(name: string, password: string): Promise<string | null> {
    if (this.inFlight >= authenticationsInFlightMax) throw new OverloadedError('too many authentications in flight; retry shortly');
    this.inFlight++;
    try {
      const user = this.policy().users.get(name);
      if (user?.salt === undefined || user.hash === undefined) return null;
      const hash = Buffer.from(await hashPassword(password, user.salt), 'base64');
      const stored = Buffer.from(user.hash, 'base64');
      if (hash.length !== stored.length || !timingSafeEqual(hash, stored)) return null;
      const key = this.policy().tokenKey;
      return key === null ? null : this.sign(key, name, user.epoch, this.nowMs() + tokenTtlMs);
    } finally {
      this.inFlight--;
    }
  }

  /** The principal a token names; throws unauthenticated when it does not verify here and now. */
  verify(token: string): string {
    const parts = token.split('.');
    const invalid = (): UnauthenticatedError => new UnauthenticatedError('invalid auth token: authenticate again');
    if (parts.length !== 4) throw invalid();
    const [encodedName, epochText, expiresText] = parts as [string, string, string, string];
    const policy = this.policy();
    const name = Buffer.from(encodedName, 'base64url').toString('utf8');
    const epoch = Number(epochText);
    const expiresAtMs = Number(expiresText);
    const user = policy.users.get(name);
    if (policy.tokenKey === null || user === undefined || user.epoch !== epoch || !(expiresAtMs > this.nowMs())) throw invalid();
    const expected = Buffer.from(this.sign(policy.tokenKey, name, epoch, expiresAtMs));
    const given = Buffer.from(token);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalid();
    return name;
  }

  private sign(key: string, name: string, epoch: number, expiresAtMs: number): string {
    const body = `${Buffer.from(name).toString('base64url')}.${epoch}.${expiresAtMs}`;
    return `${body}.${createHmac('sha256', Buffer.from(key, 'base64')).update(body).digest('base64url')}`;
  }
}
