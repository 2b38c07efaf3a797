// The canary's SLIs (docs/operations.md "The canary"), read from this node's /metrics. With
// --canary the cell's leader runs the probes and exports baton_canary_* beside its own metrics;
// a follower says so and links to the leader's console. Without the flag no node has them: the
// canary may still run as its own process (baton canary), with its own /metrics.
import { byId, el, row, table } from './dom.js';
import { total, type Samples } from './metrics.js';

const probes = ['lock', 'election', 'lease', 'watch', 'stale_owner'] as const;

export interface CanaryCellView {
  readonly leader: number;
  readonly member: number;
  readonly members: readonly { id: number; clientUrl: string }[];
}

export function renderCanary(samples: Samples, status: CanaryCellView | null, router: boolean): void {
  const target = byId('canary');
  if (router) {
    target.replaceChildren(el('p', {}, 'The router runs no canary: with --canary each cell\'s leader runs it; open a cell leader\'s console (the cells table) for its SLIs.'));
    return;
  }
  const running = samples.get('baton_canary_running');
  if (running === undefined) {
    target.replaceChildren(el('p', { class: 'note' },
      'The canary does not run inside this cell (start its members with --canary or BATON_CANARY=true; the leader then runs it). '
      + 'It can also run as its own process: baton canary --endpoints ... --metrics-port P serves the same SLIs on its own /metrics.'));
    return;
  }
  if (total(samples, 'baton_canary_running') === 0) {
    const leader = status?.members.find((member) => member.id === status.leader);
    target.replaceChildren(el('p', { 'data-canary': 'elsewhere' }, 'The canary runs on the cell\'s leader (leader-elected), not on this member: ',
      leader === undefined ? el('span', { class: 'bad' }, 'no leader is known now') : el('a', { href: `${leader.clientUrl}/ui/` }, `the leader's console (${leader.clientUrl})`), '.'));
    return;
  }
  const of = (name: string, probe: string, result?: string): number =>
    total(samples, name, (labels) => labels['probe'] === probe && (result === undefined || labels['result'] === result));
  const rows = probes.map((probe) => {
    const count = of('baton_canary_probe_seconds_count', probe);
    const mean = count === 0 ? '' : `${((of('baton_canary_probe_seconds_sum', probe) / count) * 1000).toFixed(1)} ms`;
    const violations = of('baton_canary_violations_total', probe);
    const ratio = samples.get('baton_canary_success_ratio')?.find((sample) => sample.labels['probe'] === probe)?.value;
    return row({ 'data-probe': probe }, probe,
      el('span', { class: 'ok-runs' }, String(of('baton_canary_probes_total', probe, 'ok'))),
      String(of('baton_canary_probes_total', probe, 'failed')),
      el('span', { class: violations === 0 ? 'violations ok' : 'violations bad' }, String(violations)),
      ratio === undefined ? '' : `${(ratio * 100).toFixed(1)} %`,
      mean);
  });
  const violations = total(samples, 'baton_canary_violations_total');
  target.replaceChildren(
    el('p', { 'data-canary': 'here' }, 'This member leads: it runs the cell\'s canary. ',
      el('span', { class: violations === 0 ? 'ok' : 'bad' }, `${violations} violation(s) (must stay 0)`),
      ` · leader losses seen ${total(samples, 'baton_canary_leader_losses_total')} · apply stalls ${total(samples, 'baton_canary_apply_stalls_total')}`
      + ` · leader known ${total(samples, 'baton_canary_leader_known') === 1 ? 'yes' : 'no'}`),
    table(['probe', 'runs ok', 'failed', 'violations', 'success ratio', 'latency (mean)'], rows, 'no probe yet'),
    el('p', { class: 'note' }, 'Counted since this member started; runs of earlier leaderships of this member included.'),
  );
}
