// The router's copy of the cell map (docs/design/cells.md): read from the control plane, then kept
// current by a watch on the map's key; corrected from wrong_cell answers in between. When the
// control plane is down the router keeps routing from this copy (and reconnects in the
// background); `ageMs` says how long ago the control plane last confirmed it.
import { request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { namespaceOf } from '../base/namespaces.js';
import { emptyCellMap, parseCellMap, type CellMap, type MapNamespace } from '../control/cell-map.js';
import { cellMapKey } from '../control/control-service.js';

const reconnectMs = 500;
const progressMs = 1_000;

export interface Owner {
  readonly namespace: MapNamespace;
  readonly endpoints: readonly string[];
}

/** Makes a request to a URL of the control plane (router-tls.ts's UpstreamClient over TLS). */
export interface ControlClient {
  request(url: string, options: RequestOptions, answer: (res: IncomingMessage) => void): ClientRequest;
}

export class MapCache {
  private map: CellMap = emptyCellMap;
  /** Corrections learnt from wrong_cell answers, newer than the map (dropped once the map catches up). */
  private readonly corrections = new Map<string, MapNamespace>();
  private readonly extraEndpoints = new Map<string, readonly string[]>();
  private confirmedAt = -1;
  private next = 0;
  private stopped = false;
  private current: { destroy(): void } | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly controlUrls: readonly string[],
    private readonly now: () => number = () => performance.now(),
    private readonly log: (message: string) => void = () => {},
    /** How the control plane is reached: http, or https with the router's certificate (router-tls.ts). */
    private readonly client: ControlClient = { request: httpRequest },
  ) {}

  get cellMap(): CellMap {
    return this.map;
  }

  /** Milliseconds since the control plane last confirmed the map; -1 before it ever did. */
  ageMs(): number {
    return this.confirmedAt < 0 ? -1 : this.now() - this.confirmedAt;
  }

  start(): void {
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.current?.destroy();
  }

  /** Resolves once a map with at least one namespace is known (or the bound passes). */
  async ready(timeoutMs: number): Promise<boolean> {
    const until = this.now() + timeoutMs;
    while (this.map.namespaces.length === 0 && this.now() < until) await new Promise((r) => setTimeout(r, 50));
    return this.map.namespaces.length > 0;
  }

  /** The owner of the namespace `key` belongs to, corrections included. */
  ownerOf(key: string): Owner | null {
    const namespaces = this.namespaces();
    const prefix = namespaceOf(namespaces.keys(), key);
    const namespace = namespaces.get(prefix);
    if (namespace === undefined) return null;
    return { namespace, endpoints: this.endpointsOf(namespace.cell) };
  }

  /** The namespaces with corrections applied; rebuilt only when the map or a correction changes. */
  namespaces(): ReadonlyMap<string, MapNamespace> {
    return (this.merged ??= this.merge());
  }

  private merged: Map<string, MapNamespace> | null = null;

  private merge(): Map<string, MapNamespace> {
    const all = new Map(this.map.namespaces.map((n) => [n.prefix, n]));
    for (const [prefix, fix] of this.corrections) {
      if ((all.get(prefix)?.epoch ?? -1) < fix.epoch) all.set(prefix, fix);
    }
    return all;
  }

  endpointsOf(cell: string): readonly string[] {
    return this.map.cells.find((c) => c.id === cell)?.endpoints ?? this.extraEndpoints.get(cell) ?? [];
  }

  /** A wrong_cell answer's details: newer than what we hold wins (an older one is ignored). */
  correct(details: { namespace?: unknown; cell?: unknown; epoch?: unknown; endpoints?: unknown }): boolean {
    const { namespace, cell, epoch, endpoints } = details;
    if (typeof namespace !== 'string' || typeof cell !== 'string' || cell === '' || typeof epoch !== 'number') return false;
    const known = this.namespaces().get(namespace);
    if (known !== undefined && known.epoch > epoch) return false;
    if (known !== undefined && known.epoch === epoch && known.cell === cell) return false;
    this.corrections.set(namespace, { prefix: namespace, cell, epoch, state: 'active' });
    this.merged = null;
    if (Array.isArray(endpoints) && endpoints.length > 0) this.extraEndpoints.set(cell, endpoints.map(String));
    return true;
  }

  /** Test hook: a deliberately stale map (a router that missed changes). */
  setMapForTest(map: CellMap): void {
    this.map = map;
    this.corrections.clear();
    this.merged = null;
  }

  private adopt(map: CellMap): void {
    if (map.epoch < this.map.epoch) return;
    this.map = map;
    this.merged = null;
    for (const [prefix, fix] of this.corrections) {
      const entry = map.namespaces.find((n) => n.prefix === prefix);
      if (entry !== undefined && entry.epoch >= fix.epoch) this.corrections.delete(prefix);
    }
    this.confirmedAt = this.now();
  }

  /** Reads the map's key, then watches it from the next revision; any failure: the next URL. */
  private connect(): void {
    if (this.stopped) return;
    const base = this.controlUrls[this.next++ % this.controlUrls.length] as string;
    const keyPath = cellMapKey.split('/').map(encodeURIComponent).join('/');
    getJson(this.client, `${base}/v1/kv${keyPath}?consistency=linearizable`, 2_000).then(
      ({ status, body }) => {
        if (this.stopped) return;
        const read = body as { revision?: number; kvs?: { value: string }[]; error?: { code?: string; revision?: number } };
        let revision: number;
        if (status === 200 && read.kvs?.[0] !== undefined) {
          this.adopt(parseCellMap(JSON.parse(read.kvs[0].value)));
          revision = read.revision ?? 0;
        } else if (status === 404) {
          this.confirmedAt = this.now();
          revision = read.error?.revision ?? 0;
        } else {
          throw new Error(`HTTP ${status}`);
        }
        this.watch(base, revision + 1);
      },
      (error: unknown) => this.retry(`control plane ${base}: ${(error as Error).message}`),
    ).catch((error: unknown) => this.retry(`control plane ${base}: ${(error as Error).message}`));
  }

  private watch(base: string, startRevision: number): void {
    const url = `${base}/v1/watch?key=${encodeURIComponent(cellMapKey)}&startRevision=${startRevision}&progressMs=${progressMs}`;
    const req = this.client.request(url, {}, (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        res.resume();
        return this.retry(`watch at ${base}: HTTP ${res.statusCode}`);
      }
      let buffered = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffered += chunk;
        let end;
        while ((end = buffered.indexOf('\n\n')) >= 0) {
          const message = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          this.onMessage(message);
        }
      });
      res.on('end', () => this.retry(`watch at ${base} ended`));
      res.on('error', () => this.retry(`watch at ${base} failed`));
    });
    req.on('error', (error) => this.retry(`watch at ${base}: ${error.message}`));
    req.end();
    this.current = req;
  }

  private onMessage(message: string): void {
    for (const line of message.split('\n')) {
      if (!line.startsWith('data:')) continue;
      const batch = JSON.parse(line.slice(5)) as { events?: { type: string; kv: { value: string } }[]; error?: unknown };
      if (batch.error !== undefined) return;
      this.confirmedAt = this.now();
      for (const event of batch.events ?? []) {
        if (event.type === 'put') this.adopt(parseCellMap(JSON.parse(event.kv.value)));
      }
    }
  }

  private retry(why: string): void {
    if (this.stopped || this.timer !== null) return;
    this.current?.destroy();
    this.current = null;
    this.log(`${why}; serving from the cached map (age ${Math.round(this.ageMs())} ms), reconnecting`);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect();
    }, reconnectMs);
  }
}

/** A GET answered with JSON (a control plane's or a cell's), bounded by `timeoutMs`. */
export function getJson(client: ControlClient, url: string, timeoutMs: number): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = client.request(url, { timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        } catch (error) {
          reject(error as Error);
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}
