// The mover's source feed in the cells world: what src/control/source-feed.ts does over SSE (a
// watch of the namespace on a source member from a revision, progress every 100 ms, ended by the
// source with wrong_cell at the fence), done on a source member's production watch hub. The
// mover's streaming catch-up and its "the feed ended at the fence: every change is in it" proof
// then run under the nemesis like the rest of the move, instead of the fallback reads only.
// Like the node's feed: a watch refused at creation, or ended for any reason but the fence, fails
// the feed (the mover reads instead); a member gone before the end is replaced by another member,
// from where the feed stands (no gap), as the node's feed tries the next endpoint.
import type { ImportedKey } from '../../base/namespace-import.js';
import type { Random } from '../../base/random.js';
import { pick } from '../../base/random.js';
import type { FeedChanges } from '../../control/source-feed.js';
import type { MoverFeed } from '../../control/mover.js';
import type { WatchConnection, Watcher } from '../../watch/index.js';
import type { SimNode } from '../sim-node.js';
import type { CellsLoop } from './cells-loop.js';
import type { SimCell } from './sim-cell.js';

/** As the node's feed asks the source (`progressMs`). */
const progressMs = 100;
const pullMs = 5;
/** Members tried before the feed fails (the node's feed tries each endpoint once). */
const membersMax = 3;

export class SimSourceFeed implements MoverFeed {
  private pending = new Map<string, ImportedKey | null>();
  private through: number;
  private createdAt = Number.POSITIVE_INFINITY;
  private ended: { fenceRevision: number } | null = null;
  private failure: string | null = null;
  private waiters: (() => void)[] = [];
  private binding: { node: SimNode; incarnation: number; connection: WatchConnection<number>; watcher: Watcher<number> } | null = null;
  private tries = 0;
  private progressAtMs = 0;

  constructor(
    private readonly loop: CellsLoop,
    private readonly cell: SimCell,
    private readonly prefix: string,
    startRevision: number,
    private readonly random: Random,
  ) {
    this.through = startRevision - 1;
    this.open();
  }

  get fenceRevision(): number | null {
    return this.ended?.fenceRevision ?? null;
  }

  get failed(): string | null {
    return this.failure;
  }

  get live(): boolean {
    return this.through >= this.createdAt;
  }

  take(): FeedChanges {
    const taken = { changes: this.pending, through: this.through };
    this.pending = new Map();
    return taken;
  }

  wait(ms: number): Promise<void> {
    if (this.ended !== null || this.failure !== null) return Promise.resolve();
    return new Promise((resolve) => {
      let done = false;
      const once = (): void => {
        if (done) return;
        done = true;
        resolve();
      };
      this.waiters.push(once);
      this.loop.at(this.loop.nowMs + Math.max(0, Math.ceil(ms)), once);
    });
  }

  async untilFenced(ms: number): Promise<boolean> {
    const until = this.loop.nowMs + ms;
    while (this.ended === null && this.failure === null && this.loop.nowMs < until) await this.wait(until - this.loop.nowMs);
    return this.ended !== null;
  }

  close(why = 'closed'): void {
    if (this.failure === null && this.ended === null) this.failure = why;
    this.unbind();
    this.wake();
  }

  private open(): void {
    if (this.failure !== null || this.ended !== null) return;
    if (this.tries++ >= membersMax) return this.fail('no member of the source kept the watch');
    const candidates = this.cell.world.runningNodes().filter((node) => node.serverDriver?.watches?.serving === true);
    if (candidates.length === 0) return this.fail('no member of the source serves watches');
    const node = pick(this.random, candidates);
    const store = node.serverDriver?.mvccStore;
    const watches = node.serverDriver?.watches;
    if (store === null || store === undefined || watches === null || watches === undefined) return this.fail('no member of the source serves watches');
    // Judged at creation, as the node's watch service does.
    const refused = store.refuseRead({ type: 'get', key: this.prefix, prefix: true });
    if (refused !== null) return this.fail(`the source refused the watch: ${refused.code} ${refused.message}`);
    const connection = watches.hub.openConnection(() => {}, () => true);
    let watcher: Watcher<number>;
    try {
      watcher = watches.hub.create(connection, 1, {
        key: this.prefix, prefix: true, startRevision: this.through + 1, prevKv: false, filter: 'all', encoding: 'sim',
      });
    } catch (error) {
      connection.close();
      return this.fail(`the source refused the watch: ${(error as Error).message}`);
    }
    this.createdAt = Math.min(this.createdAt, store.revision);
    this.binding = { node, incarnation: node.incarnation, connection, watcher };
    this.loop.note(`feed ${this.prefix}: on ${this.cell.id} n${node.id} from ${this.through + 1}`);
    this.schedule();
  }

  private schedule(): void {
    const binding = this.binding;
    if (binding === null) return;
    this.loop.at(this.loop.nowMs + pullMs, () => this.pull(binding));
  }

  private pull(binding: NonNullable<SimSourceFeed['binding']>): void {
    if (this.binding !== binding || this.failure !== null || this.ended !== null) return;
    const { node } = binding;
    if (node.incarnation !== binding.incarnation || node.state === 'crashed' || node.state === 'removed' || node.serverDriver?.watches?.hub === undefined) {
      // The member is gone (its connection with it): another one, from where the feed stands.
      this.binding = null;
      this.open();
      return;
    }
    if (node.state === 'running') {
      if (this.loop.nowMs - this.progressAtMs >= progressMs) {
        this.progressAtMs = this.loop.nowMs;
        node.serverDriver?.watches?.hub.progress(binding.watcher);
      }
      for (let output = binding.connection.next(); output !== null; output = binding.connection.next()) {
        if (output.type === 'batch') {
          for (const event of output.batch.events) {
            const kv = event.kv;
            this.pending.set(kv.key, event.type === 'delete' ? null : {
              key: kv.key, value: kv.value, version: kv.version, createRevision: kv.createRevision, modRevision: kv.modRevision, lease: kv.lease,
            });
          }
          this.through = Math.max(this.through, output.batch.revision);
          this.wake();
          continue;
        }
        if (output.reason === 'wrong_cell') {
          this.through = Math.max(this.through, output.lastRevision);
          this.ended = { fenceRevision: output.lastRevision };
          this.unbind();
        } else {
          this.fail(`the source ended the watch: ${output.reason}`);
        }
        this.wake();
        return;
      }
    }
    this.schedule();
  }

  private unbind(): void {
    const binding = this.binding;
    this.binding = null;
    if (binding !== null && binding.node.incarnation === binding.incarnation) binding.connection.close();
  }

  private fail(why: string): void {
    if (this.failure === null && this.ended === null) this.failure = why;
    this.unbind();
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }
}
