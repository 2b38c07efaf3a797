// --canary: the canary's probes (src/canary) inside the cell, leader-elected. Every member that
// has the flag watches its own role; the one that leads starts the canary against its own cell
// (every member's client URL, over the client TLS the cell uses) and stops it when it loses the
// leadership, so one canary runs per cell and a new leader takes over after a failover. Its SLIs
// (baton_canary_*) go into this node's /metrics: counters add up over the member's leaderships,
// and baton_canary_running says which member is running it now.
//
// Its principal: on a client port with TLS and a trusted CA (--trusted-ca-file) it presents this
// member's certificate, whose baton://CELL/MEMBER identity acts as root on the native port (as
// members forwarding to members do: src/api/principal.ts), so authorization never refuses it.
// Root gives it nothing the node's process does not hold already (the store, the token key); it
// only ever touches its own names. Without such a port (plain HTTP, or TLS with no client CA)
// nothing identifies it: with authorization on, every call is refused, and it says why once per
// run instead of only failing probes.
import { readFileSync } from 'node:fs';
import { Canary, type CanaryOptions } from '../canary/canary.js';
import { Gauge, type Registry } from '../metrics/registry.js';
import type { ClientTlsConfig, PeerTlsConfig } from './config.js';
import type { NodeLogger } from './node.js';

export interface CellCanaryParts {
  readonly isLeader: () => boolean;
  /** The cell's members' client URLs, as the member table says now. */
  readonly endpoints: () => readonly string[];
  readonly registry: Registry;
  readonly log: NodeLogger;
  /**
   * This member's own names for the probes (canary-CELL-mMEMBER): each leadership of this member
   * reuses the same keys rather than leave one more key behind per leader change, and never
   * shares them with another member's canary (an old leader may still finish its round).
   */
  readonly names: string;
  readonly clientTls: ClientTlsConfig | null;
  readonly peerTls: PeerTlsConfig | null;
  readonly intervalMs?: number;
  /** How often the role is looked at: the canary starts at most this long after an election. */
  readonly roleEveryMs?: number;
}

const errorBackoffMs = 10_000;

/** Who the cell takes the canary for (its calls to its own cell). */
export type CanaryPrincipal = 'member' | 'anonymous';

/** The member's certificate names it only where the client port verifies certificates against a CA. */
export function canaryPrincipal(clientTls: ClientTlsConfig | null): CanaryPrincipal {
  return clientTls !== null && clientTls.caFile !== undefined ? 'member' : 'anonymous';
}

/** A refusal of the canary's principal: a probe's typed error, or the monitor's status refused. */
function isRefusal(event: string, line: Record<string, unknown>): boolean {
  if (event === 'monitor_refused') return true;
  return event === 'probe_failed' && /^(PermissionDenied|Unauthenticated)Error$/.test(String(line['kind']));
}

/** Events worth a warning: the canary saw the cell fail a promise or lose its leader. */
const warnings = new Set(['probe_failed', 'violation', 'leader_lost', 'apply_stuck', 'monitor_refused']);

export class CellCanary {
  private readonly canary: Canary;
  private running: Promise<unknown> | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** After a run ended on an error, the next one waits until then (no error line every 250 ms). */
  private notBeforeMs = 0;
  readonly principal: CanaryPrincipal;
  /** The refusal of this run was explained (once per run). */
  private refusalExplained = false;

  constructor(private readonly parts: CellCanaryParts) {
    const tls = parts.clientTls === null ? undefined : clientTlsOf(parts.clientTls, parts.peerTls);
    this.principal = canaryPrincipal(parts.clientTls);
    this.canary = new Canary({
      endpoints: parts.endpoints,
      intervalMs: parts.intervalMs ?? 1000,
      registry: parts.registry,
      names: parts.names,
      ...(tls === undefined ? {} : { tls }),
      log: (line) => this.logLine(line),
    });
    parts.registry.add(new Gauge('baton_canary_running', '1 while this member (the leader) runs the cell\'s canary (--canary)', () => (this.running === null ? 0 : 1)));
  }

  start(): void {
    this.timer = setInterval(() => this.follow(), this.parts.roleEveryMs ?? 250);
    this.follow();
  }

  /** Stops following the role and ends a run in progress (its probes finish their round, at most `boundMs`). */
  async stop(boundMs = 5_000): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.canary.stop();
    const running = this.running;
    if (running === null) return;
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([running, new Promise((resolve) => (bound = setTimeout(resolve, boundMs)))]).finally(() => clearTimeout(bound));
  }

  private follow(): void {
    const leads = this.parts.isLeader();
    if (leads && this.running === null && performance.now() >= this.notBeforeMs) {
      this.refusalExplained = false;
      this.parts.log.info('canary: this member leads: starting the cell\'s canary', {
        endpoints: this.parts.endpoints().join(','),
        principal: this.principal === 'member' ? 'member certificate (root on the native port)' : 'anonymous',
      });
      this.running = this.canary.run().then(
        (summary) => this.parts.log.info('canary: stopped', { violations: summary.violations, leaderLosses: summary.leaderLosses }),
        (error: unknown) => {
          this.notBeforeMs = performance.now() + errorBackoffMs;
          this.parts.log.error(`canary: stopped on an error (trying again in ${errorBackoffMs / 1000} s): ${(error as Error)?.message ?? String(error)}`);
        },
      ).finally(() => {
        this.running = null;
      });
    } else if (!leads && this.running !== null) {
      this.parts.log.info('canary: this member no longer leads: stopping the cell\'s canary');
      this.canary.stop();
    }
  }

  private logLine(line: Record<string, unknown>): void {
    const event = String(line['event'] ?? 'event');
    if (event === 'summary' || event === 'metrics') return;
    const fields: Record<string, string | number> = {};
    for (const [name, value] of Object.entries(line)) {
      if (name !== 'event') fields[name] = typeof value === 'number' || typeof value === 'string' ? value : JSON.stringify(value);
    }
    if (warnings.has(event)) this.parts.log.warn(`canary: ${event}`, fields);
    else this.parts.log.info(`canary: ${event}`, fields);
    if (!this.refusalExplained && isRefusal(event, line)) {
      this.refusalExplained = true;
      this.parts.log.error(this.principal === 'anonymous'
        ? 'canary: the cell refuses the canary\'s calls: it has no identity on the client port (plain HTTP, or TLS without --trusted-ca-file), '
          + 'so with authorization on it is anonymous and denied everything; give the client port TLS with --trusted-ca-file (the member '
          + 'certificate then acts as root) or run without --canary'
        : 'canary: the cell refuses the canary\'s calls although it presents this member\'s certificate: the certificate must chain to '
          + '--trusted-ca-file and name this cell (baton://CELL/MEMBER)');
    }
  }
}

/**
 * The canary calls its own cell as a client: trusting the client listener's CA (else the peers'),
 * presenting this member's certificate (server certificates carry clientAuth: security/certs.ts).
 */
function clientTlsOf(client: ClientTlsConfig, peer: PeerTlsConfig | null): NonNullable<CanaryOptions['tls']> {
  const caFile = client.caFile ?? peer?.caFile;
  return {
    ...(caFile === undefined ? {} : { ca: readFileSync(caFile, 'utf8') }),
    cert: readFileSync(client.certFile, 'utf8'),
    key: readFileSync(client.keyFile, 'utf8'),
  };
}
