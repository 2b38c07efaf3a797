// Where the lock and election queues live in the key space. In base, not in src/lock, because
// authorization (src/auth) names these ranges too and the lock service asks authorization.
export const lockKeyPrefix = (name: string): string => `/locks/${name}/`;
export const electionKeyPrefix = (name: string): string => `/elections/${name}/`;
/** Every election's queue is below this; every other queue is a lock's. */
export const electionsRoot = '/elections/';
