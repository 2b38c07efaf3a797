// etcd's alarms (NOSPACE, CORRUPT) as one node keeps them: raised by etcdctl through the facade
// (Maintenance.Alarm) or by the node's corruption check (node/corruption-check.ts), listed by
// Alarm GET and in Status `errors`, cleared by `etcdctl alarm disarm`. Not replicated: each node
// has its own table (etcd's is replicated), empty after a restart.

/** etcd's AlarmType numbers. */
export const alarmType = { none: 0, nospace: 1, corrupt: 2 } as const;

export interface RaisedAlarm {
  /** uint64 as decimal text, as etcd's AlarmMember.memberID travels. */
  readonly memberID: string;
  readonly alarm: number;
}

export class AlarmTable {
  private readonly raised = new Map<string, RaisedAlarm>();

  activate(memberID: string, alarm: number): RaisedAlarm {
    const entry = { memberID, alarm };
    this.raised.set(`${memberID} ${alarm}`, entry);
    return entry;
  }

  /** The alarm cleared, or null when it was not raised. */
  deactivate(memberID: string, alarm: number): RaisedAlarm | null {
    const key = `${memberID} ${alarm}`;
    const entry = this.raised.get(key) ?? null;
    this.raised.delete(key);
    return entry;
  }

  /** Every raised alarm, or those of one type. */
  list(alarm: number = alarmType.none): RaisedAlarm[] {
    return [...this.raised.values()].filter((a) => alarm === alarmType.none || a.alarm === alarm);
  }

  /** As etcd's Status lists them in `errors` ("memberID:1 alarm:NOSPACE"). */
  errors(): string[] {
    return this.list().map((a) => `memberID:${a.memberID} alarm:${a.alarm === alarmType.nospace ? 'NOSPACE' : 'CORRUPT'}`);
  }
}
