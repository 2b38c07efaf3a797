// The cell and its members as the serving node sees them (GET /v1/cluster/status), with this
// node's metrics (GET /metrics): health (the leader's view, the same on every member), peer
// round-trip times (measured by the leader only), watches open here, and the live charts.
import { describe, getJson } from './api.js';
import { Chart } from './chart.js';
import { byId, el, row, showError, table } from './dom.js';
import { total, type Samples } from './metrics.js';

interface Member { id: number; name: string; clientUrl: string; role: string; healthy: boolean; matchIndex?: number }
interface Status {
  cell: string; member: number; leader: number; term: number; commitIndex: number; appliedIndex: number;
  revision: number; compactRevision: number; members: Member[];
}

const hex = (id: number): string => id.toString(16);

/** `baton router`'s status (src/router): the cell map it routes by, not a cell. */
interface RouterStatus {
  router: true;
  epoch: number;
  cacheAgeMs: number;
  cells: { id: string; endpoints: string[]; leader: string | null }[];
  namespaces: { prefix: string; cell: string; epoch: number; state: string }[];
}

export class CellView {
  private readonly throughput = new Chart(byId<HTMLCanvasElement>('chart-throughput'), 'applied entries/s', (v) => v.toFixed(1));
  private readonly latency = new Chart(byId<HTMLCanvasElement>('chart-latency'), 'latency of writes via this node, mean ms', (v) => v.toFixed(2));
  private readonly lag = new Chart(byId<HTMLCanvasElement>('chart-lag'), 'apply lag, entries', (v) => v.toFixed(0));
  private previous: { at: number; applied: number; latencySum: number; latencyCount: number } | null = null;

  /** Set once the serving process turns out to be a router. */
  router = false;
  /** The router's cells (ids), as its last status named them; null on a node. */
  routerCells: string[] | null = null;
  private settleFirst: () => void = () => undefined;
  /** Settles once the first status read ended (answered or refused). */
  readonly firstStatus = new Promise<void>((resolve) => (this.settleFirst = resolve));

  async loadStatus(): Promise<Status | null> {
    try {
      const status = await getJson<Status | RouterStatus>('/v1/cluster/status');
      if ('router' in status && status.router === true) {
        this.router = true;
        this.routerCells = status.cells.map((cell) => cell.id);
        this.renderRouter(status);
        return null;
      }
      this.renderStatus(status as Status);
      return status as Status;
    } catch (error) {
      byId('cell-summary').replaceChildren(el('span', { class: 'bad' }, 'cell status refused or unavailable'));
      showError(byId('members'), describe(error));
      return null;
    } finally {
      this.settleFirst();
    }
  }

  private renderStatus(status: Status): void {
    byId('cell-summary').replaceChildren(
      el('span', {}, `cell ${status.cell}`),
      el('span', {}, `serving member ${hex(status.member)}`),
      el('span', {}, status.leader === 0 ? 'no leader' : `leader ${hex(status.leader)}`),
      el('span', {}, `term ${status.term}`),
      el('span', {}, `revision ${status.revision}`),
      el('span', {}, `compacted to ${status.compactRevision}`),
    );
    this.members = status;
  }

  private members: Status | null = null;

  /** The last status read (null before, or on a router). */
  get status(): Status | null {
    return this.members;
  }

  /** The router's page: the cells it knows (each leader's console linked) and the namespaces. */
  private renderRouter(status: RouterStatus): void {
    byId('cell-summary').replaceChildren(
      el('span', {}, 'baton router'),
      el('span', {}, `cell map epoch ${status.epoch}`),
      el('span', {}, `confirmed ${(status.cacheAgeMs / 1000).toFixed(1)} s ago`),
    );
    const cells = status.cells.map((cell) => row(
      { 'data-cell': cell.id },
      cell.id,
      cell.leader === null ? 'unknown' : el('a', { href: `${cell.leader}/ui/` }, cell.leader),
      cell.endpoints.join(', '),
    ));
    const namespaces = status.namespaces.map((namespace) => row(
      { 'data-namespace': namespace.prefix },
      namespace.prefix, namespace.cell, String(namespace.epoch), namespace.state,
    ));
    byId('members-title').textContent = 'Cells (through this router)';
    byId('members').replaceChildren(
      table(['cell', 'leader (its console)', 'members'], cells, 'no cell in the map yet'),
      el('h3', {}, 'Namespaces'),
      table(['prefix', 'cell', 'epoch', 'state'], namespaces, 'no namespace'),
      el('p', { class: 'note' }, 'Keys, leases, locks and elections below are read through the router, from the cell that owns each prefix; a prefix spanning cells is refused (cross_cell). Each cell\'s console shows its members and charts.'),
    );
    byId('charts').hidden = true;
  }

  renderMembers(samples: Samples | null): void {
    const status = this.members;
    if (status === null) return;
    const rtt = (id: number): string => {
      if (samples === null) return '';
      const to = (labels: Readonly<Record<string, string>>): boolean => labels['To'] === hex(id) || labels['To'] === String(id);
      const count = total(samples, 'etcd_network_peer_round_trip_time_seconds_count', to);
      return count === 0 ? '' : `${((total(samples, 'etcd_network_peer_round_trip_time_seconds_sum', to) / count) * 1000).toFixed(2)} ms (mean)`;
    };
    const rows = status.members.map((member) => {
      const self = member.id === status.member;
      const link = el('a', { href: `${member.clientUrl}/ui/` }, member.clientUrl);
      return row(
        { 'data-member': hex(member.id) },
        `${member.name} (${hex(member.id)})${self ? ' · this node' : ''}`,
        member.id === status.leader ? 'leader' : member.role === 'learner' ? 'learner' : 'follower',
        member.healthy ? el('span', { class: 'ok' }, 'healthy') : el('span', { class: 'bad' }, 'not heard from'),
        self ? String(status.term) : '',
        self ? String(status.commitIndex) : '',
        self ? String(status.appliedIndex) : '',
        member.matchIndex === undefined ? '' : String(member.matchIndex),
        rtt(member.id),
        link,
      );
    });
    byId('members').replaceChildren(
      table(['member', 'role', 'health (leader\'s view)', 'term', 'commit index', 'applied index', 'log replicated to (leader\'s view)', 'peer RTT (leader)', 'its console'], rows, 'no member'),
      el('p', { class: 'note' }, 'Term, commit and applied index are this node\'s own: open another member\'s console for its view. Replication progress and RTT are known to the leader only: its console shows them.'),
    );
  }

  onMetrics(samples: Samples): void {
    if (this.router) {
      const forwarded = (samples.get('baton_router_forwards_total') ?? []).map((sample) => `${sample.labels['cell'] ?? '?'} ${sample.value}`).join(', ');
      byId('watches').replaceChildren(el('p', {}, `The router holds no watch of its own: it relays each one to its cell. Requests forwarded so far: ${forwarded || 'none'}.`));
      return;
    }
    const now = performance.now();
    const applied = total(samples, 'etcd_server_proposals_applied_total');
    const latencySum = total(samples, 'baton_proposal_seconds_sum');
    const latencyCount = total(samples, 'baton_proposal_seconds_count');
    if (this.previous !== null) {
      const seconds = (now - this.previous.at) / 1000;
      this.throughput.push(Math.max(0, applied - this.previous.applied) / seconds);
      const count = latencyCount - this.previous.latencyCount;
      this.latency.push(count > 0 ? ((latencySum - this.previous.latencySum) / count) * 1000 : 0);
    }
    this.lag.push(total(samples, 'baton_apply_lag_entries'));
    this.previous = { at: now, applied, latencySum, latencyCount };
    const watches = total(samples, 'baton_watches');
    byId('watches').replaceChildren(
      el('p', {}, `${watches} watch(es) open on this node (this console's own three feeds among them: keys, locks, elections).`),
      el('p', { class: 'note' }, `Ended watches by reason: ${endedWatches(samples) || 'none'}.`),
    );
    this.renderMembers(samples);
  }
}

function endedWatches(samples: Samples): string {
  return (samples.get('baton_watch_ended_total') ?? [])
    .filter((sample) => sample.value > 0)
    .map((sample) => `${sample.labels['reason'] ?? '?'} ${sample.value}`)
    .join(', ');
}
