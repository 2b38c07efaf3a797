// Quota per tenant (docs/api/tenants.md): each tenant's use beside its limits (keys, value bytes,
// leases), as the cell applied it (GET /v1/tenants, a linearizable read; admin-only where
// authorization is on, so a refusal is shown in place). Usage changes with every write and is not
// a key, so no watch carries it: it is re-read every few seconds. Through a router each cell of
// the map is asked (the router sends a request to the cell its Baton-Cell header names).
import { authHeaders, describe, errorOf } from './api.js';
import { byId, el, row, showError, table } from './dom.js';

interface TenantLimits { maxKeys: number | null; maxBytes: number | null; maxLeases: number | null }
interface Tenant { name: string; prefixes: string[]; limits: TenantLimits; usage: { keys: number; bytes: number; leases: number } }
interface Tenants { version: number; tenants: Tenant[] }

/** "used / limit (share)", or "used / unlimited"; the share is marked once it reaches 90 %. */
function useOf(used: number, limit: number | null, unit: (n: number) => string): HTMLElement {
  if (limit === null) return el('span', { class: 'use' }, `${unit(used)} / unlimited`);
  const share = limit === 0 ? (used > 0 ? 1 : 0) : used / limit;
  const text = `${unit(used)} / ${unit(limit)} (${(share * 100).toFixed(share < 0.1 ? 1 : 0)} %)`;
  return el('span', { class: share >= 0.9 ? 'use bad' : 'use' }, text);
}

const count = (n: number): string => String(n);
function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

async function tenantsOf(cell: string | null): Promise<Tenants> {
  const headers: Record<string, string> = { ...authHeaders(), ...(cell === null ? {} : { 'baton-cell': cell }) };
  const response = await fetch('/v1/tenants', { headers, credentials: 'same-origin' });
  if (!response.ok) throw await errorOf(response);
  return (await response.json()) as Tenants;
}

export class TenantsView {
  /**
   * `cells` says where to ask: null for the serving node's own cell, else the router's cells
   * (known once the router's status is read).
   */
  constructor(private readonly cells: () => readonly string[] | null) {}

  async load(): Promise<void> {
    const target = byId('tenants');
    const cells = this.cells();
    const asked = cells ?? [null];
    const answers = await Promise.all(asked.map(async (cell) => {
      try {
        return { cell, tenants: await tenantsOf(cell), error: null };
      } catch (error) {
        return { cell, tenants: null, error: describe(error) };
      }
    }));
    // One cell (a node's console): its refusal takes the view's place, as in every other view.
    const only = answers[0];
    if (cells === null && only !== undefined && only.error !== null) return showError(target, only.error);
    const rows: HTMLTableRowElement[] = [];
    const refusals: HTMLElement[] = [];
    for (const answer of answers) {
      if (answer.error !== null) refusals.push(el('p', { class: 'error', role: 'alert' }, `cell ${answer.cell}: ${answer.error}`));
      for (const tenant of answer.tenants?.tenants ?? []) {
        rows.push(row(
          { 'data-tenant': tenant.name, ...(answer.cell === null ? {} : { 'data-tenant-cell': answer.cell }) },
          ...(cells === null ? [] : [answer.cell ?? '']),
          tenant.name,
          tenant.prefixes.join(', '),
          useOf(tenant.usage.keys, tenant.limits.maxKeys, count),
          useOf(tenant.usage.bytes, tenant.limits.maxBytes, bytes),
          useOf(tenant.usage.leases, tenant.limits.maxLeases, count),
        ));
      }
    }
    const headings = [...(cells === null ? [] : ['cell']), 'tenant', 'prefixes', 'keys', 'value bytes', 'leases'];
    const version = cells === null && only?.tenants != null ? ` (tenant table version ${only.tenants.version})` : '';
    target.replaceChildren(
      table(headings, rows, 'no tenant: keys count to no tenant and no quota applies'),
      ...refusals,
      el('p', { class: 'note' }, `Use as applied by the cell${version}, re-read every few seconds; past a limit, growth is refused with 429 quota_exceeded (deletes always work).`),
    );
  }
}
