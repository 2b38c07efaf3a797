// Watchers for a fault run: SSE watches of the run's key prefix that resume on another member
// from their last known revision whenever a connection fails (as a real client does). Each
// connection becomes one WatchRecord, so the checker judges every stream on its own: exact,
// in order, and complete up to the last progress revision it announced.
import type { CommittedEvent, WatchRecord } from '../../src/check/index.js';
import { sseData } from './sse-data.js';

interface Batch {
  revision?: number;
  events?: { type: 'put' | 'delete'; kv: { key: string; value: string; modRevision: number } }[];
  error?: { code: string; compactRevision?: number };
}

interface Connection {
  readonly startRevision: number;
  readonly received: CommittedEvent[];
  progressRevision: number;
}

export class WatchSession {
  readonly records: WatchRecord[] = [];
  private readonly abort = new AbortController();
  private current: Connection | null = null;
  private readonly done: Promise<void>;

  constructor(
    readonly id: string,
    /** The members' client URLs now (they change when members are replaced). */
    private readonly urls: () => readonly string[],
    private readonly prefix: string,
    firstUrl: number,
  ) {
    this.done = this.run(firstUrl);
  }

  /** The highest revision this session is known complete through. */
  progress(): number {
    return this.current?.progressRevision ?? 0;
  }

  /** Wait (bounded) until caught up through `revision`, then end the session. */
  async finish(revision: number, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.progress() < revision && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    this.abort.abort();
    await this.done;
  }

  private async run(firstUrl: number): Promise<void> {
    let next = 1;
    for (let attempt = 0; attempt < 10_000 && !this.abort.signal.aborted; attempt++) {
      const urls = this.urls();
      const url = urls[(firstUrl + attempt) % urls.length] as string;
      const connection: Connection = { startRevision: next, received: [], progressRevision: 0 };
      this.current = connection;
      const end = await this.connect(url, connection);
      const base = { id: `${this.id}.${attempt}`, key: this.prefix, prefix: true };
      const record = { ...base, startRevision: connection.startRevision, received: connection.received };
      if (this.abort.signal.aborted) {
        this.records.push({ ...record, end: { type: 'open', progressRevision: connection.progressRevision } });
        return;
      }
      this.records.push({ ...record, end: end ?? { type: 'closed', progressRevision: connection.progressRevision } });
      if (end !== null) return; // compacted: a real client would re-read; the run stops watching
      const last = connection.received[connection.received.length - 1]?.revision ?? 0;
      next = Math.max(next, last + 1, connection.progressRevision + 1);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** One SSE connection; null when it ended without a compacted error. */
  private async connect(url: string, connection: Connection): Promise<WatchRecord['end'] | null> {
    const query = `key=${encodeURIComponent(this.prefix)}&prefix=true&startRevision=${connection.startRevision}&progressMs=200`;
    try {
      const res = await fetch(`${url}/v1/watch?${query}`, { signal: this.abort.signal });
      if (res.status !== 200 || res.body === null) return null;
      for await (const batch of sseData<Batch>(res.body as AsyncIterable<Uint8Array>)) {
        if (batch.error !== undefined) {
          if (batch.error.code !== 'compacted') return null;
          return { type: 'compacted', compactRevision: batch.error.compactRevision ?? 0 };
        }
        for (const event of batch.events ?? []) {
          const value = event.type === 'delete' ? null : event.kv.value;
          connection.received.push({ revision: event.kv.modRevision, key: event.kv.key, type: event.type, value });
        }
        if (batch.revision !== undefined) {
          connection.progressRevision = Math.max(connection.progressRevision, batch.revision);
        }
      }
    } catch {
      // a killed member, a reset, or our own abort: the caller decides
    }
    return null;
  }
}

/** The cell's current revision, from a linearizable read's header. */
export async function currentRevision(url: string, key: string): Promise<number | null> {
  try {
    const res = await fetch(`${url}/v1/kv${key}`, { signal: AbortSignal.timeout(3_000) });
    await res.arrayBuffer();
    const header = res.headers.get('baton-revision');
    return header === null ? null : Number(header);
  } catch {
    return null;
  }
}

/**
 * The committed log of the prefix: a fresh watch from revision 1 after every fault healed, read
 * until it is caught up through `revision`. Null if compacted or not caught up in time.
 */
export async function committedLog(
  url: string,
  prefix: string,
  revision: number,
): Promise<CommittedEvent[] | null> {
  const truth = new WatchSession('truth', () => [url], prefix, 0);
  await truth.finish(revision, 20_000);
  const record = truth.records[0];
  if (truth.records.length !== 1 || record === undefined || record.end.type !== 'open') return null;
  if (record.end.progressRevision < revision) return null;
  return [...record.received];
}
