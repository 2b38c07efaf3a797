// A client of several cells without a router (docs/client.md "Several cells"): it loads the cell
// map from the control plane (or a router, which serves the same GET /v1/control/namespaces),
// caches it per namespace, and sends each key's requests straight to the owning cell's members
// through one BatonClient per cell (leader first, failover, one stream per cell). Stale routing
// is corrected in one round trip: a wrong_cell answer updates the cache from its details (the
// whole map is re-read when it names a cell the client does not know) and the request is sent
// once more, at once (no backoff sleep), to the owner: HTTP calls in HttpCaller, stream requests
// in streamCall, both through the hook set by BatonClient.followCells.
// A request spanning cells (a txn, a prefix read or delete) is refused here before sending, with
// the router's `cross_cell` error. A session's lease lives in the one cell owning the namespace
// named when it is opened; its locks must live in that cell too (checked before acquiring).
import { InvalidArgumentError, type BatonError } from '../base/errors.js';
import { rootNamespace, spanOf, type KeySpan } from '../base/namespaces.js';
import { lockKeyPrefix } from '../base/queue-prefixes.js';
import { BatonClient, type DeleteOptions, type GetOptions, type MutationOptions, type PutOptions } from './client.js';
import { CellMap, txnSpans, type CellMapBody } from './cell-map.js';
import { Locks, type AcquireOptions, type Lock, type LockState } from './lock.js';
import type { Session, SessionOptions } from './session.js';
import { streamCall } from './stream-call.js';
import type { ClientOptions, DeleteResult, KeyValue, PutResult, RangeResult, TxnRequest, TxnResult } from './types.js';

export interface CellsClientOptions extends Omit<ClientOptions, 'endpoints'> {
  /** Where the cell map is read: the control plane's members, or routers. */
  readonly control: readonly string[];
}

export interface CellSessionOptions extends SessionOptions {
  /** The namespace whose cell holds the lease (default the root `/`): its locks must be there too. */
  readonly namespace?: string;
}

export class BatonCellsClient {
  readonly map = new CellMap();
  /** The control plane (or router) the map is read from. */
  readonly control: BatonClient;
  /** wrong_cell answers followed by a retry at the owner (each at once, no sleep). */
  wrongCellRetries = 0;
  /** Whole-map reads so far (the first, then one per unknown cell named by a wrong_cell). */
  mapLoads = 0;
  private readonly cells = new Map<string, BatonClient>();
  private readonly sessionCells = new WeakMap<Session, string>();
  private loading: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly options: CellsClientOptions) {
    this.control = new BatonClient({ ...options, endpoints: options.control });
  }

  /** A client with the cell map loaded. */
  static async connect(options: CellsClientOptions): Promise<BatonCellsClient> {
    const client = new BatonCellsClient(options);
    await client.refresh();
    return client;
  }

  /** Re-reads the whole map (one read at a time: concurrent callers share it). */
  refresh(): Promise<void> {
    this.loading ??= (async () => {
      try {
        const body = await this.control.request<CellMapBody>({ method: 'GET', path: '/v1/control/namespaces', mutation: false });
        this.map.load(body);
        this.mapLoads++;
        for (const [cell, client] of this.cells) {
          const urls = this.map.endpointsOf(cell);
          if (urls.length > 0 && urls.some((url) => !client.endpoints.all.includes(url))) client.endpoints.follow(urls);
        }
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }

  /** The client of `cell` (created on first use; its endpoints from the map). */
  clientOf(cell: string): BatonClient {
    let client = this.cells.get(cell);
    if (client === undefined) {
      const endpoints = this.map.endpointsOf(cell);
      if (endpoints.length === 0) throw new InvalidArgumentError(`no cell ${cell} in the cell map`, { cell });
      client = new BatonClient({ ...this.options, endpoints });
      client.followCells(this.redirect);
      this.cells.set(cell, client);
    }
    return client;
  }

  /** The client of the cell owning `key` (or, prefix true, every key under it): for watches, elections. */
  async clientFor(key: string, options: { prefix?: boolean } = {}): Promise<BatonClient> {
    return this.owner([spanOf({ key, prefix: options.prefix === true })]);
  }

  async put(key: string, value: string | Uint8Array, options: PutOptions = {}): Promise<PutResult> {
    return (await this.owner([spanOf({ key })])).put(key, value, options);
  }

  async get(key: string, options: GetOptions = {}): Promise<RangeResult> {
    return (await this.owner([spanOf({ key, prefix: options.prefix === true })])).get(key, options);
  }

  async getValue(key: string, options: Omit<GetOptions, 'prefix'> = {}): Promise<KeyValue | null> {
    return (await this.owner([spanOf({ key })])).getValue(key, options);
  }

  async delete(key: string, options: DeleteOptions = {}): Promise<DeleteResult> {
    return (await this.owner([spanOf({ key, prefix: options.prefix === true })])).delete(key, options);
  }

  /** A txn whose keys all live in one cell (else CrossCellError, nothing sent). */
  async txn(request: TxnRequest, options: MutationOptions = {}): Promise<TxnResult> {
    return (await this.owner(txnSpans(request))).txn(request, options);
  }

  /**
   * A session whose lease lives in the cell owning `namespace` (default `/`), renewed on that
   * cell's stream. The map is re-read first: a lease granted on a stale owner would be in the
   * wrong cell for good (lease grants name no key, so no cell refuses them).
   */
  async session(options: CellSessionOptions = {}): Promise<Session> {
    await this.refresh();
    const cell = this.map.namespaceOfKey(options.namespace ?? rootNamespace).cell;
    const session = await this.clientOf(cell).session(options);
    this.sessionCells.set(session, cell);
    return session;
  }

  /** The cell holding a session's lease (one opened by this client). */
  cellOfSession(session: Session): string {
    const cell = this.sessionCells.get(session);
    if (cell === undefined) throw new InvalidArgumentError('the session was not opened by this cells client');
    return cell;
  }

  /** The locks `session` can hold: those whose namespace (`/locks/NAME/`) lives in its cell. */
  locks(session: Session): CellLocks {
    return new CellLocks(this, session, this.cellOfSession(session));
  }

  /** A lock's state, asked of its cell over that cell's stream (follows wrong_cell once, at once). */
  async lockState(name: string): Promise<LockState> {
    const client = await this.owner([spanOf({ key: lockKeyPrefix(name), prefix: true })]);
    return streamCall<LockState>(client, { type: 'lockState', name }, { mutation: false });
  }

  /** The cell owning a lock's namespace (the map re-read once when it is not `expected`). */
  async cellOfLock(name: string, expected: string): Promise<string> {
    const spans = [spanOf({ key: lockKeyPrefix(name), prefix: true })];
    const cell = (await this.ready()).cellOfSpans(spans);
    if (cell === expected) return cell;
    await this.refresh();
    return this.map.cellOfSpans(spans);
  }

  /** Closes every cell's client (sessions revoke their leases) and the control client. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.cells.values(), this.control].map((client) => client.close()));
  }

  private async ready(): Promise<CellMap> {
    if (!this.map.loaded) await this.refresh();
    return this.map;
  }

  private async owner(spans: readonly KeySpan[]): Promise<BatonClient> {
    return this.clientOf((await this.ready()).cellOfSpans(spans));
  }

  /** wrong_cell: the cache takes the answer; the owner's client, or null (no owner, unknown cell). */
  private readonly redirect = async (error: BatonError): Promise<BatonClient | null> => {
    if (this.closed) return null;
    const named = error.details['cell'];
    const known = typeof named === 'string' && this.map.knows(named);
    const cell = this.map.learn(error.details);
    if (cell === null || cell === '') return null;
    // A cell the map did not name: the map changed more than this answer says, so read it whole
    // (the answer's endpoints serve meanwhile, and if the read fails).
    if (!known) {
      await this.refresh().catch(() => undefined);
      this.map.learn(error.details);
    }
    this.wrongCellRetries++;
    return this.clientOf(cell);
  };
}

/** The locks of one session in its cell (a lock of another cell is refused before sending). */
export class CellLocks {
  constructor(
    private readonly cells: BatonCellsClient,
    private readonly session: Session,
    private readonly cell: string,
  ) {}

  async acquire(name: string, options: AcquireOptions = {}): Promise<Lock> {
    const owner = await this.cells.cellOfLock(name, this.cell);
    if (owner !== this.cell) {
      const namespace = lockKeyPrefix(name);
      throw new InvalidArgumentError(
        `lock ${name} lives in cell ${owner}, this session's lease in cell ${this.cell}: open a session with namespace ${namespace}`,
        { lock: name, cell: owner, sessionCell: this.cell },
      );
    }
    return new Locks(this.cells.clientOf(this.cell), this.session).acquire(name, options);
  }

  state(name: string): Promise<LockState> {
    return this.cells.lockState(name);
  }
}
