// The mover's source feed in the cells world: what src/control/source-feed.ts does over SSE (a
// watch of the namespace on a source member from a revision, progress every 100 ms, ended by the
// source with wrong_cell at the fence), done on a source member's production watch hub. The
// mover's streaming catch-up and its "the feed ended at the fence: every change is in it" proof
// then run under the nemesis like the rest of the move, instead of the fallback reads only.
// Like the node's feed: a watch refused at creation, or ended for any reason but the fence, fails
// the feed (the mover reads instead); a member gone before the end is replaced by another member,
// from where the feed stands (no gap), as the node's feed tries the next endpoint. What the feed
// holds and how it ends is the node's own code (src/control/feed-state.ts): only the transport
// differs.
import type { Random } from '../../base/random.js';
import { pick } from '../../base/random.js';
import { FeedState } from '../../control/feed-state.js';
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

export class SimSourceFeed extends FeedState implements MoverFeed {
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
    super(startRevision, { nowMs: () => loop.nowMs, after: (ms, run) => loop.at(loop.nowMs + Math.ceil(ms), run) });
    this.open();
  }

  protected override fail(why: string): void {
    this.unbind();
    super.fail(why);
  }

  private open(): void {
    if (this.over) return;
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
        key: this.prefix, prefix: true, startRevision: this.nextRevision, prevKv: false, filter: 'all', encoding: 'sim',
      });
    } catch (error) {
      connection.close();
      return this.fail(`the source refused the watch: ${(error as Error).message}`);
    }
    this.opened(store.revision);
    this.binding = { node, incarnation: node.incarnation, connection, watcher };
    this.loop.note(`feed ${this.prefix}: on ${this.cell.id} n${node.id} from ${this.nextRevision}`);
    this.schedule();
  }

  private schedule(): void {
    const binding = this.binding;
    if (binding === null) return;
    this.loop.at(this.loop.nowMs + pullMs, () => this.pull(binding));
  }

  private pull(binding: NonNullable<SimSourceFeed['binding']>): void {
    if (this.binding !== binding || this.over) return;
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
          this.batch(output.batch.events.map(({ type, kv }) => ({
            type, kv: { key: kv.key, value: kv.value, version: kv.version, createRevision: kv.createRevision, modRevision: kv.modRevision, lease: kv.lease },
          })), output.batch.revision);
          continue;
        }
        if (output.reason === 'wrong_cell') {
          this.unbind();
          this.endedAt(output.lastRevision);
        } else {
          this.fail(`the source ended the watch: ${output.reason}`);
        }
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
}
