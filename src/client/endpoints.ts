// Which node to talk to. Every node serves the whole API (followers forward writes), so any
// healthy endpoint will do; the leader goes first only because it saves the forwarding hop.
// After a failure the client moves to the next endpoint, so one dead node costs one attempt.
import type { ClusterStatus } from './types.js';

export class EndpointSet {
  private urls: string[];
  private current = 0;
  /** When the member list was last learned from the cell (monotonic ms; -Infinity = never). */
  discoveredAtMs = Number.NEGATIVE_INFINITY;
  /**
   * The endpoint last asked was a router (its status said so): it routes each request by its
   * keys, so a wrong_cell it passes on (a namespace mid-move) is worth asking it again shortly.
   */
  routed = false;

  constructor(seeds: readonly string[], random: () => number) {
    const cleaned = [...new Set(seeds.map(normalize).filter((url) => url.length > 0))];
    if (cleaned.length === 0) throw new Error('at least one endpoint is needed');
    this.urls = cleaned;
    // Start at a random seed so that many clients with the same list do not all pile on the first.
    this.current = Math.floor(random() * cleaned.length);
  }

  get all(): readonly string[] {
    return this.urls;
  }

  pick(): string {
    return this.urls[this.current % this.urls.length] as string;
  }

  /** The endpoint failed (no answer, 503, 504): try the next one. */
  failed(url: string): void {
    if (this.pick() === url) this.current = (this.current + 1) % this.urls.length;
  }

  /**
   * A cell answered wrong_cell naming the owner's endpoints (docs/design/cells.md): talk to those
   * from now on (seeds stay last). One client follows one cell at a time: a client using
   * namespaces of several cells pays one extra round trip per switch.
   */
  follow(owner: readonly string[]): void {
    const urls = [...new Set(owner.map(normalize).filter((url) => url.length > 0))];
    if (urls.length === 0) return;
    this.urls = [...urls, ...this.urls.filter((url) => !urls.includes(url))];
    this.current = 0;
  }

  /** Adopts the members a node reported (leader first); seeds stay in case all are stale. */
  learn(status: ClusterStatus, nowMs: number): void {
    this.discoveredAtMs = nowMs;
    this.routed = (status as unknown as { router?: unknown }).router === true;
    // A router's status lists cells, not members: nothing to learn from it.
    if (!Array.isArray(status.members)) return;
    const leader = status.members.find((m) => m.id === status.leader);
    const members = status.members
      .filter((m) => m.clientUrl !== '' && m.role === 'voter')
      .sort((a, b) => (a === leader ? -1 : b === leader ? 1 : a.id - b.id))
      .map((m) => normalize(m.clientUrl));
    if (members.length === 0) return;
    const seeds = this.urls.filter((url) => !members.includes(url));
    this.urls = [...members, ...seeds];
    this.current = 0;
  }
}

function normalize(url: string): string {
  return url.trim().replace(/\/+$/, '');
}
