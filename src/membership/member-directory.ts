// Who the members are and where to reach them. Membership (voter, learner, gone) comes only from
// committed configuration entries in the Raft core; this directory adds each member's name and
// URLs. It starts from what the node was started with (the initial cluster, or what a joining
// node learned from the cell) and then follows the replicated member table that every
// membership change carries (src/mvcc/members-record.ts). Ids are never reused, so an id's
// entry never changes meaning.
import { assert } from '../base/assert.js';

export interface MemberInfo {
  readonly id: number;
  readonly name: string;
  readonly peerUrl: string;
  readonly clientUrl: string;
}

/** The replicated member table: every member of the configuration a change produces. */
export interface MembersRecord {
  readonly version: 1;
  /** The highest id ever given out: new members get the next one (ids are never reused). */
  readonly maxMemberId: number;
  readonly members: readonly MemberInfo[];
  /**
   * The last `recordedChangesMax` changes made with a Request-ID, oldest first: a retry with the
   * same id is answered with the first outcome, on any leader (the record is replicated state).
   */
  readonly changes?: readonly RecordedChange[];
}

/** A membership change made with a Request-ID, and what it answered. */
export interface RecordedChange {
  readonly requestId: string;
  readonly kind: 'add' | 'promote' | 'remove';
  readonly member: MemberInfo;
  readonly role: 'voter' | 'learner';
}

export const recordedChangesMax = 16;

export const memberNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;
export const memberUrlBytesMax = 256;

export function encodeMembersRecord(record: MembersRecord): string {
  assert(record.members.every((m) => m.id > 0 && m.id <= record.maxMemberId), 'ids within maxMemberId');
  return JSON.stringify(record);
}

/** The record, or null when the text is not one (never trusted blindly: it came off disk). */
export function decodeMembersRecord(text: string): MembersRecord | null {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return null;
  }
  const record = data as Partial<MembersRecord> | null;
  if (record === null || typeof record !== 'object' || record.version !== 1) return null;
  if (!Number.isSafeInteger(record.maxMemberId) || !Array.isArray(record.members)) return null;
  if (!record.members.every(isMemberInfo)) return null;
  // Damaged or foreign change history costs only the retries' recognition, never the table.
  if (record.changes !== undefined && !(Array.isArray(record.changes) && record.changes.every(isRecordedChange))) {
    return { version: 1, maxMemberId: record.maxMemberId as number, members: record.members };
  }
  return record as MembersRecord;
}

function isRecordedChange(value: unknown): value is RecordedChange {
  const c = value as Partial<RecordedChange> | null;
  return (
    c !== null &&
    typeof c === 'object' &&
    typeof c.requestId === 'string' &&
    (c.kind === 'add' || c.kind === 'promote' || c.kind === 'remove') &&
    (c.role === 'voter' || c.role === 'learner') &&
    isMemberInfo(c.member)
  );
}

export function isMemberInfo(value: unknown): value is MemberInfo {
  const m = value as Partial<MemberInfo> | null;
  return (
    m !== null &&
    typeof m === 'object' &&
    Number.isSafeInteger(m.id) &&
    (m.id as number) > 0 &&
    typeof m.name === 'string' &&
    memberNamePattern.test(m.name) &&
    typeof m.peerUrl === 'string' &&
    typeof m.clientUrl === 'string'
  );
}

export class MemberDirectory {
  private readonly byId = new Map<number, MemberInfo>();
  /**
   * The same members as an array updated in place, for parts that look members up by id (the
   * lease forwarders): they see added members without being rebuilt.
   */
  readonly live: MemberInfo[] = [];
  private maxId = 0;
  /** The stored record last merged (re-reading the same text is a no-op). */
  private lastRecordText: string | null = null;

  constructor(bootstrap: readonly MemberInfo[]) {
    this.merge(bootstrap, 0);
  }

  get(id: number): MemberInfo | undefined {
    return this.byId.get(id);
  }

  all(): MemberInfo[] {
    return [...this.byId.values()].sort((a, b) => a.id - b.id);
  }

  /** The highest id known to have been given out. */
  get maxMemberId(): number {
    return this.maxId;
  }

  /** Merges the replicated record (JSON text from the store); returns whether anything changed. */
  mergeRecordText(text: string | null): boolean {
    if (text === null || text === this.lastRecordText) return false;
    this.lastRecordText = text;
    const record = decodeMembersRecord(text);
    if (record === null) return false;
    this.merge(record.members, record.maxMemberId);
    return true;
  }

  merge(members: readonly MemberInfo[], maxMemberId: number): void {
    this.maxId = Math.max(this.maxId, maxMemberId);
    for (const member of members) {
      assert(member.id > 0, 'member ids are positive');
      this.byId.set(member.id, member);
      this.maxId = Math.max(this.maxId, member.id);
      const at = this.live.findIndex((m) => m.id === member.id);
      if (at >= 0) this.live[at] = member;
      else this.live.push(member);
    }
  }
}
