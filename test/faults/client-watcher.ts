// A watcher through the client library's watch (one WebSocket per client, resumed by the client
// itself across dropped connections and killed members): one record for the whole run, from
// revision 1, complete through the last batch revision it yielded (progress batches included).
import { CompactedError, type BatonClient, type Watch } from '../../src/client/index.js';
import type { CommittedEvent, WatchRecord } from '../../src/check/index.js';

export class ClientWatcher {
  readonly records: WatchRecord[] = [];
  private readonly received: CommittedEvent[] = [];
  private progressRevision = 0;
  private readonly watch: Watch;
  private readonly done: Promise<void>;
  private end: WatchRecord['end'] | null = null;

  constructor(
    readonly id: string,
    private readonly client: BatonClient,
    private readonly prefix: string,
  ) {
    this.watch = client.watch(prefix, { prefix: true, startRevision: 1, progressMs: 200, yieldProgress: true });
    this.done = this.run();
  }

  progress(): number {
    return this.progressRevision;
  }

  /** Wait (bounded) until caught up through `revision`, then end the watch and record it. */
  async finish(revision: number, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.progressRevision < revision && this.end === null && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    this.watch.cancel();
    await this.done;
    if (this.records.length > 0) return;
    const base = { id: this.id, key: this.prefix, prefix: true, startRevision: 1, received: [...this.received] };
    this.records.push({ ...base, end: this.end ?? { type: 'open', progressRevision: this.progressRevision } });
    await this.client.close();
  }

  private async run(): Promise<void> {
    try {
      for await (const batch of this.watch) {
        for (const event of batch.events) {
          const value = event.type === 'delete' ? null : event.kv.value;
          this.received.push({ revision: event.kv.modRevision, key: event.kv.key, type: event.type, value });
        }
        this.progressRevision = Math.max(this.progressRevision, batch.revision);
      }
    } catch (error) {
      if (error instanceof CompactedError) {
        const compactRevision = Number((error.details as { compactRevision?: number }).compactRevision ?? 0);
        this.end = { type: 'compacted', compactRevision };
      } else {
        // Any other end (the client closed): what arrived up to the last progress still counts.
        this.end = { type: 'closed', progressRevision: this.progressRevision };
      }
    }
  }
}
