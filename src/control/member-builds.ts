// The build gate of namespace moves (docs/design/cells.md, "Every member on a build that lands").
// A move's landing is one import that carries the destination's ownership table (`own`, with the
// namespace `landingFrom` the source until then): a member on a build older than that ignores
// both, takes the namespace at the flip's table instead and applies the window's writes
// differently from its cell's newer members. Nothing in the log stops such a member, so the
// control plane looks before it starts a move and again before the fence: every member of both
// cells must report moveProtocol >= moveProtocolNeeded in its own /v1/cluster/status.
import { PreconditionFailedError, UnavailableError, type BatonError } from '../base/errors.js';
import { moveProtocolNeeded, nestedMoveProtocolNeeded } from '../base/namespace-import.js';
import type { MapCell } from './cell-map.js';

const statusTimeoutMs = 2_000;

export interface MemberBuild {
  readonly id: number;
  readonly name: string;
  readonly clientUrl: string;
  /** What its status says; 0: no such field (a build older than landing imports); null: it did not answer. */
  readonly moveProtocol: number | null;
  readonly storeFormat: number | null;
}

/** A cell's members as its configuration lists them, each as its own status describes it (null: no member answered). */
export interface CellBuilds {
  readonly cell: string;
  readonly members: readonly MemberBuild[] | null;
}

type Status = Record<string, unknown>;

async function statusAt(url: string): Promise<Status | null> {
  try {
    const response = await fetch(`${url}/v1/cluster/status`, { signal: AbortSignal.timeout(statusTimeoutMs) });
    if (!response.ok) return null;
    const body = (await response.json()) as unknown;
    return body !== null && typeof body === 'object' ? (body as Status) : null;
  } catch {
    return null;
  }
}

function numberOr<T>(value: unknown, otherwise: T): number | T {
  return typeof value === 'number' && Number.isFinite(value) ? value : otherwise;
}

/** Asks the cell's endpoints for its member list, then every member for its own status. */
export async function cellBuilds(cell: MapCell): Promise<CellBuilds> {
  let listed: { status: Status; url: string } | null = null;
  for (const url of cell.endpoints) {
    const status = await statusAt(url);
    if (status !== null && Array.isArray(status['members'])) {
      listed = { status, url };
      break;
    }
  }
  if (listed === null) return { cell: cell.id, members: null };
  const { status, url } = listed;
  const members = (status['members'] as { id?: unknown; name?: unknown; clientUrl?: unknown }[]).map((m) => ({
    id: numberOr(m.id, 0), name: String(m.name ?? ''), clientUrl: String(m.clientUrl ?? ''),
  }));
  const builds = await Promise.all(members.map(async (member): Promise<MemberBuild> => {
    const own = member.clientUrl === url && status['member'] === member.id ? status : await statusAt(member.clientUrl);
    // An answer from another member at that address (replaced meanwhile) says nothing of this one.
    const answered = own !== null && own['member'] === member.id ? own : null;
    return {
      ...member,
      moveProtocol: answered === null ? null : numberOr(answered['moveProtocol'], 0),
      storeFormat: answered === null ? null : numberOr(answered['storeFormat'], null),
    };
  }));
  return { cell: cell.id, members: builds };
}

function described(cell: string, member: MemberBuild): string {
  return `cell ${cell} member ${member.name} (id ${member.id}, ${member.clientUrl})`;
}

/**
 * Why a move between these cells may not go on, or null. An older member always stops it. A
 * member that does not answer does not: it applies nothing while it is down, and one that comes
 * back on an older build before the fence is seen there (refusing silence would forbid moving a
 * namespace off a cell with a member down, when an operator most wants to). A cell none of whose
 * members answers stops it only where `silentCell` is 'refuse' (the start: nothing could be copied).
 */
export function buildsProblem(cells: readonly CellBuilds[], silentCell: 'refuse' | 'allow', needed = moveProtocolNeeded): BatonError | null {
  const ids = cells.map((c) => c.cell).join(' and ');
  const older: { cell: string; member: MemberBuild }[] = [];
  const silent: string[] = [];
  for (const { cell, members } of cells) {
    if (members === null) silent.push(cell);
    for (const member of members ?? []) {
      if (member.moveProtocol !== null && member.moveProtocol < needed) older.push({ cell, member });
    }
  }
  if (older.length > 0) {
    const list = older.map(({ cell, member }) => `${described(cell, member)} runs a build with move protocol ${member.moveProtocol}`
      + `${member.moveProtocol === 0 ? ' (none reported: older than landing imports)' : ''}, store format ${member.storeFormat ?? 'unknown'}`);
    return new PreconditionFailedError(
      `${list.join('; ')}: moving ${needed > moveProtocolNeeded ? 'a namespace with namespaces nested in it' : 'a namespace'} needs every member of ${ids} `
      + `on a build with move protocol ${needed} or newer (${needed > moveProtocolNeeded ? 'imports that leave nested namespaces alone' : 'landing imports, leases carried across moves'}); `
      + `restart ${older.length === 1 ? 'it' : 'them'} on such a build first`,
      {
        moveProtocolNeeded: needed,
        members: older.map(({ cell, member }) => ({ cell, id: member.id, name: member.name, clientUrl: member.clientUrl, moveProtocol: member.moveProtocol, storeFormat: member.storeFormat })),
      },
    );
  }
  if (silentCell === 'refuse' && silent.length > 0) {
    return new UnavailableError(`no member of cell ${silent.join(' or ')} answered its status: its members' builds could not be confirmed; try again once it answers`, { cells: silent });
  }
  return null;
}

/** The protocol a move of `prefix` needs: more with namespaces nested in it (namespace-import.ts). */
export function protocolNeeded(nested: readonly string[]): number {
  return nested.length > 0 ? nestedMoveProtocolNeeded : moveProtocolNeeded;
}

/** Throws buildsProblem's error for a move between `cells` now. */
export async function checkMoveBuilds(cells: readonly MapCell[], silentCell: 'refuse' | 'allow', needed = moveProtocolNeeded): Promise<void> {
  const problem = buildsProblem(await Promise.all(cells.map(cellBuilds)), silentCell, needed);
  if (problem !== null) throw problem;
}
