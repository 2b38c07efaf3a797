// Per-tenant metrics (#28), computed at scrape from the tenant table, the stored use and this
// node's admission: use and limit of each quota, and the refusals this node answered.
import { limitOf, quotaNames, type Quota, type TenantRecord, type TenantUsage } from '../base/tenants.js';
import type { TenantAdmission } from '../base/tenant-admission.js';
import type { FairAdmission } from '../base/fair-admission.js';
import type { SessionGate } from '../base/session-gate.js';
import type { TenantWatchQuotas } from '../watch/index.js';
import { LabelledGauge, type Registry } from '../metrics/registry.js';

export interface TenantMetricSources {
  tenants(): readonly TenantRecord[];
  usage(name: string): TenantUsage;
  readonly admission: TenantAdmission;
  /** Watches, buffered watch bytes and event rate per tenant on this node. */
  readonly watchQuotas: TenantWatchQuotas;
  /** Fair admission's queues; null: off. */
  readonly fair: FairAdmission | null;
  /** The new-session gate; null: off. */
  readonly sessions: SessionGate | null;
}

/** A quota's use now: stored ones as applied here, admission ones on this node (txn_ops has none). */
function usedOf(sources: TenantMetricSources, tenant: TenantRecord, stored: TenantUsage, quota: Quota): number | null {
  switch (quota) {
    case 'keys': case 'bytes': case 'leases':
      return stored[quota];
    case 'reads_per_second':
      return sources.admission.ratePerSecond(tenant.name, 'read');
    case 'writes_per_second':
      return sources.admission.ratePerSecond(tenant.name, 'write');
    case 'concurrent_requests':
      return sources.admission.inFlight(tenant.name);
    case 'watches':
      return sources.watchQuotas.account(tenant.name)?.watchers ?? 0;
    case 'watch_bytes':
      return sources.watchQuotas.account(tenant.name)?.bytes ?? 0;
    case 'events_per_second':
      return sources.watchQuotas.account(tenant.name)?.perSecond(performance.now()) ?? 0;
    case 'txn_ops':
      return null;
  }
}

/**
 * One tenant's use of the admission quotas on this node and the refusals it answered (GET
 * /v1/tenants, `baton tenant show`): admission is per node, so this is the answering node's.
 */
export function tenantNodeUse(sources: TenantMetricSources, name: string): Record<string, unknown> {
  const tenant = sources.tenants().find((t) => t.name === name);
  const used: Record<string, number> = {};
  if (tenant !== undefined) {
    const stored = sources.usage(name);
    for (const quota of quotaNames) {
      if (quota === 'keys' || quota === 'bytes' || quota === 'leases') continue;
      const value = usedOf(sources, tenant, stored, quota);
      if (value !== null) used[quota] = value;
    }
  }
  const rejections: Record<string, number> = {};
  for (const { tenant: t, quota, count } of sources.admission.rejections()) if (t === name) rejections[quota] = count;
  const account = sources.watchQuotas.account(name);
  return { used, rejections, slowWatchersEnded: account?.slowEnded ?? 0, watchPacedWaits: account?.pacedWaits ?? 0 };
}

export function addTenantMetrics(registry: Registry, sources: TenantMetricSources): void {
  registry.add(new LabelledGauge('baton_tenant_quota_used', 'A tenant\'s use of each quota: keys, bytes, leases as applied on this node; rates (last whole second), concurrent requests, watches, buffered watch bytes and watch events per second on this node',
    function* () {
      for (const tenant of sources.tenants()) {
        const stored = sources.usage(tenant.name);
        for (const quota of quotaNames) {
          const used = usedOf(sources, tenant, stored, quota);
          if (used !== null) yield [{ tenant: tenant.name, quota }, used] as const;
        }
      }
    }));
  registry.add(new LabelledGauge('baton_tenant_quota_limit', 'A tenant\'s limit of each quota it has one of (an unlimited quota has no series)',
    function* () {
      for (const tenant of sources.tenants()) {
        for (const quota of quotaNames) {
          const limit = limitOf(tenant.limits, quota);
          if (limit !== null) yield [{ tenant: tenant.name, quota }, limit] as const;
        }
      }
    }));
  registry.add(new LabelledGauge('baton_tenant_rejections_total', 'Requests this node refused with quota_exceeded, by tenant and quota (admission and hard quotas)',
    () => sources.admission.rejections().map(({ tenant, quota, count }) => [{ tenant, quota }, count] as const), 'counter'));
  registry.add(new LabelledGauge('baton_tenant_slow_watchers_total', 'Watchers this node ended as slow consumers because their tenant was over its buffered watch bytes (watch_bytes), by tenant',
    () => sources.tenants().map((t) => [{ tenant: t.name }, sources.watchQuotas.account(t.name)?.slowEnded ?? 0] as const), 'counter'));
  registry.add(new LabelledGauge('baton_tenant_watch_paced_total', 'Times a watcher of the tenant waited on this node for its event rate (events_per_second) before delivering, by tenant',
    () => sources.tenants().map((t) => [{ tenant: t.name }, sources.watchQuotas.account(t.name)?.pacedWaits ?? 0] as const), 'counter'));
  const sessions = sources.sessions;
  if (sessions !== null) {
    registry.add(new LabelledGauge('baton_new_sessions_total', 'Opening requests (lease grants, stream opens) this node admitted or refused past its new-sessions rate, by outcome',
      () => [[{ outcome: 'admitted' }, sessions.counts().admitted], [{ outcome: 'refused' }, sessions.counts().refused]] as const, 'counter'));
  }
  const fair = sources.fair;
  if (fair === null) return;
  registry.add(new LabelledGauge('baton_fair_seats_in_use', 'Fair admission: seats held by requests being served on this node, by level (small, list)',
    () => [[{ level: 'small' }, fair.small.inUse], [{ level: 'list' }, fair.lists.inUse]] as const));
  registry.add(new LabelledGauge('baton_fair_seats', 'Fair admission: the seats of each level on this node',
    () => [[{ level: 'small' }, fair.small.options.seats], [{ level: 'list' }, fair.lists.options.seats]] as const));
  registry.add(new LabelledGauge('baton_fair_waiting', 'Fair admission: requests waiting in the queues on this node, by level',
    () => [[{ level: 'small' }, fair.small.waiting], [{ level: 'list' }, fair.lists.waiting]] as const));
  registry.add(new LabelledGauge('baton_fair_rejections_total', 'Fair admission: requests refused (queue_full) or dropped past their deadline (queue_deadline) on this node, by tenant (\'\' for none)',
    () => fair.dropped().map(({ flow, reason, count }) => [{ tenant: flow, reason }, count] as const), 'counter'));
}
