// Which member of which cluster this data directory belongs to (member.json). A node that
// bootstraps a new cell derives its id and the cluster id from --initial-cluster; a node started
// with --initial-cluster-state existing asks the running cell instead (GET /v1/cluster/members on
// the members' client URLs): the cell has given it an id when `baton member add` registered it.
// Once written, the file decides: a restarted node never re-derives its identity.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CorruptFileError } from '../base/errors.js';
import { ConfigError } from '../base/config-error.js';
import { isMemberInfo, type MemberInfo } from './member-directory.js';

/** What identity needs from the node's configuration. */
export interface IdentityConfig {
  readonly dataDir: string;
  readonly initialClusterState: 'new' | 'existing';
  readonly clusterId: string;
  readonly cellId: string;
  readonly memberId: number;
  readonly name: string;
  readonly members: readonly MemberInfo[];
}

export interface NodeIdentity {
  readonly clusterId: string;
  readonly memberId: number;
  /** Members known at start: the initial cluster, or the cell's members when this node joined. */
  readonly bootstrap: readonly MemberInfo[];
  /** Joined a running cell: its first configuration comes from the log, not from the flags. */
  readonly joined: boolean;
  /** The data directory was written by `baton snapshot restore` (node/restore.ts), else null. */
  readonly restoredFrom: RestoreRecord | null;
}

/** What a restored cell records of the backup it came from (shown in /v1/cluster/status). */
export interface RestoreRecord {
  /** SHA-256 of the backup file. */
  readonly fileSha256: string;
  /** The old cell's cluster id when the restore was told it, else null (backups do not carry it). */
  readonly oldClusterId: string | null;
  readonly oldRevision: number;
  readonly oldEpoch: number;
  /** The restored cell's epoch (oldEpoch + 1). */
  readonly epoch: number;
  /** When this member's data directory was restored (ISO 8601). */
  readonly time: string;
}

interface StoredIdentity {
  clusterId: string;
  cellId: string;
  memberId: number;
  name: string;
  joined?: boolean;
  members?: MemberInfo[];
  restoredFrom?: RestoreRecord;
  /**
   * `derived`: every member's id is restoredMemberId(epoch, place in --initial-cluster), not the
   * place itself (restores before this field kept the places).
   */
  memberIds?: 'derived';
}

/**
 * A restored cell's member ids: new ones, so no id of the old cell means a member of the new one
 * (the cluster id already keeps the two apart at the handshake; this keeps logs, metrics and
 * member lists apart too, and the old cell's ids count as removed members in the new one). Each
 * member derives every id from the new epoch and the member's place in --initial-cluster, so the
 * per-member restores and the nodes agree without a shared table. Still dense from the new base:
 * ids below the highest one given out that the configuration lacks are removed members
 * (member-peers.ts refuseRemoved walks them), so the base stays small (epoch x 1000).
 */
export function restoredMemberId(epoch: number, place: number): number {
  return epoch * 1000 + place;
}

const joinAttemptsMax = 60;
const joinRetryMs = 500;

export async function resolveIdentity(config: IdentityConfig, log: { info(m: string): void; warn(m: string): void }): Promise<NodeIdentity> {
  const path = join(config.dataDir, 'member.json');
  if (existsSync(path)) return checkStored(config, path, readStored(path));
  if (config.initialClusterState === 'new') {
    writeStored(path, { clusterId: config.clusterId, cellId: config.cellId, memberId: config.memberId, name: config.name });
    return { clusterId: config.clusterId, memberId: config.memberId, bootstrap: config.members, joined: false, restoredFrom: null };
  }
  const found = await discover(config, log);
  writeStored(path, { ...found, cellId: config.cellId, name: config.name, joined: true });
  log.info(`joined cluster ${found.clusterId} as member ${found.memberId} (${found.members.length} members known)`);
  return { clusterId: found.clusterId, memberId: found.memberId, bootstrap: found.members, joined: true, restoredFrom: null };
}

function readStored(path: string): StoredIdentity {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as StoredIdentity;
  } catch (error) {
    throw new CorruptFileError(path, 0, `unreadable member identity: ${(error as Error).message}`);
  }
}

/**
 * The identity `baton snapshot restore` writes into a member's new data directory: the restored
 * cell's cluster id (not the one the flags derive: a restore with the old flags is a new cluster).
 */
export function writeRestoredIdentity(
  dataDir: string,
  identity: { clusterId: string; cellId: string; place: number; name: string; restoredFrom: RestoreRecord },
): number {
  const { place, ...rest } = identity;
  const memberId = restoredMemberId(identity.restoredFrom.epoch, place);
  writeStored(join(dataDir, 'member.json'), { ...rest, memberId, memberIds: 'derived' });
  return memberId;
}

function writeStored(path: string, identity: StoredIdentity): void {
  writeFileSync(`${path}.tmp`, JSON.stringify(identity, null, 2));
  renameSync(`${path}.tmp`, path);
}

/** A data directory belongs to one member of one cluster; refuse to start as anything else. */
function checkStored(config: IdentityConfig, path: string, stored: StoredIdentity): NodeIdentity {
  const refuse = (field: string, storedValue: unknown, value: unknown): never => {
    throw new Error(
      `${path}: this data directory belongs to ${field} ${String(storedValue)}, not ${String(value)}; ` +
        'refusing to start (use another --data-dir, or the original --initial-cluster)',
    );
  };
  if (stored.joined === true) {
    // Its id and cluster came from the cell when it joined; the flags only name it.
    if (stored.name !== config.name) refuse('name', stored.name, config.name);
    if (stored.cellId !== config.cellId) refuse('cellId', stored.cellId, config.cellId);
    const members = Array.isArray(stored.members) ? stored.members.filter(isMemberInfo) : [];
    return { clusterId: stored.clusterId, memberId: stored.memberId, bootstrap: members, joined: true, restoredFrom: null };
  }
  // A restored directory's cluster id came from the restore; its member must still be the one the flags name.
  const restoredFrom = stored.restoredFrom ?? null;
  const clusterId = restoredFrom === null ? config.clusterId : stored.clusterId;
  const bootstrap = stored.memberIds === 'derived' && restoredFrom !== null
    ? config.members.map((m) => ({ ...m, id: restoredMemberId(restoredFrom.epoch, m.id) }))
    : config.members;
  const memberId = bootstrap.find((m) => m.name === config.name)?.id ?? config.memberId;
  const expected = { clusterId, cellId: config.cellId, memberId, name: config.name };
  for (const field of ['clusterId', 'cellId', 'memberId', 'name'] as const) {
    if (stored[field] !== expected[field]) refuse(field, stored[field], expected[field]);
  }
  return { clusterId, memberId, bootstrap, joined: false, restoredFrom };
}

interface Discovered {
  clusterId: string;
  memberId: number;
  members: MemberInfo[];
}

/** Asks the running members (their client URLs) who this node is; retries while they settle. */
async function discover(config: IdentityConfig, log: { warn(m: string): void }): Promise<Discovered> {
  const others = config.members.filter((m) => m.name !== config.name && m.clientUrl !== '');
  if (others.length === 0) {
    throw new ConfigError(
      '--initial-cluster-state existing needs the running members\' client URLs in --initial-cluster-clients ' +
        '(`baton member add` prints both flags)',
    );
  }
  let lastProblem = '';
  for (let attempt = 0; attempt < joinAttemptsMax; attempt++) {
    for (const member of others) {
      try {
        return await askMember(config, member.clientUrl);
      } catch (error) {
        if (error instanceof ConfigError) throw error;
        lastProblem = `${member.clientUrl}: ${(error as Error).message}`;
      }
    }
    if (attempt % 10 === 0) log.warn(`joining: no member answered yet (${lastProblem}); retrying`);
    await new Promise((resolve) => setTimeout(resolve, joinRetryMs));
  }
  throw new Error(`could not join the cell: no member answered GET /v1/cluster/members (${lastProblem})`);
}

async function askMember(config: IdentityConfig, clientUrl: string): Promise<Discovered> {
  const res = await fetch(`${clientUrl}/v1/cluster/members`, { signal: AbortSignal.timeout(3000) });
  const body = (await res.json()) as { clusterId?: unknown; cell?: unknown; members?: unknown };
  if (res.status !== 200) throw new Error(`answered ${res.status}`);
  if (typeof body.clusterId !== 'string' || !Array.isArray(body.members)) throw new Error('not a member list');
  if (body.cell !== config.cellId) {
    throw new ConfigError(`${clientUrl} serves cell ${String(body.cell)}, this node is configured for ${config.cellId}`);
  }
  const listed = body.members.filter(isMemberInfo) as (MemberInfo & { role?: unknown })[];
  const members = listed.map(({ id, name, peerUrl, clientUrl: url }) => ({ id, name, peerUrl, clientUrl: url }));
  const self = listed.find((m) => m.name === config.name);
  if (self === undefined) {
    throw new Error(`the cell has no member named ${config.name} yet (add it first: baton member add ${config.name} ...)`);
  }
  if (self.role !== 'learner') {
    // A voter that restarts with an empty log would forget votes and entries it acknowledged.
    throw new ConfigError(
      `${config.name} is member ${self.id}, a ${String(self.role)} of the cell: only a new learner joins with an empty ` +
        'data directory (remove the member, then add it again)',
    );
  }
  const ownPeerUrl = config.members.find((m) => m.name === config.name)?.peerUrl ?? '';
  if (sameUrl(self.peerUrl, ownPeerUrl) === false) {
    throw new ConfigError(`the cell registered ${config.name} with peer URL ${self.peerUrl}, but this node's is ${ownPeerUrl}`);
  }
  return { clusterId: body.clusterId, memberId: self.id, members };
}

function sameUrl(a: string, b: string): boolean {
  try {
    return new URL(a).href === new URL(b).href;
  } catch {
    return false;
  }
}
