// Service registration and discovery on plain keys: an instance is
// `/services/{service}/instances/{id}` holding JSON metadata, attached to a session's lease, so
// it disappears when the process stops renewing. Discovery lists the prefix at revision R, then
// watches from R + 1: every change after the listing arrives exactly once, in order. Through a
// brief interruption (a node dies, the stream moves) the watch resumes from its last revision
// and the set keeps serving its last known state meanwhile; when the history it needs was
// compacted it lists again at a new R (and reports the difference as one change).
import { EventEmitter } from 'node:events';
import { CompactedError, InvalidArgumentError } from '../base/errors.js';
import type { BatonClient } from './client.js';
import { checkBytes, checkName, requireSafe, type OwnerSession } from './coordination.js';
import { ClosedError } from './errors.js';
import { backoffDelayMs } from './retry.js';
import type { KeyValue } from './types.js';
import type { Watch } from './watch.js';

/** Metadata is read by every discoverer: keep it small (JSON, ≤ 4 KiB by convention). */
export const serviceMetadataBytesMax = 4 * 1024;
/** A listing larger than this is refused rather than held in memory. */
export const serviceInstancesMax = 10_000;

export const servicePrefix = (service: string): string => `/services/${service}/instances/`;

export interface ServiceInstance {
  readonly id: string;
  /** The parsed JSON metadata (the raw string if someone stored invalid JSON). */
  readonly metadata: unknown;
  readonly lease: number;
  readonly modRevision: number;
}

export interface Registration {
  readonly key: string;
  readonly revision: number;
  /** Aborts when the session is lost or the instance is deregistered. */
  readonly signal: AbortSignal;
  /** Deletes the key now (the lease would delete it on expiry anyway). */
  deregister(): Promise<void>;
}

/**
 * @example
 * const services = client.services(session);
 * await services.register('payments', 'pod-7', { url: 'http://10.0.0.7:8080' });
 * const set = services.discover('payments');
 * await set.ready;
 * set.on('change', (instances) => balancer.update([...instances.values()]));
 */
export class Services {
  constructor(
    private readonly client: BatonClient,
    readonly session: OwnerSession | null = null,
  ) {}

  /** Writes this instance's key on the session's lease (overwrites a previous registration). */
  async register(service: string, id: string, metadata: unknown): Promise<Registration> {
    checkName(service, 'service name');
    checkName(id, 'instance id');
    const session = this.session;
    if (session === null) throw new InvalidArgumentError('registering needs a session');
    const text = JSON.stringify(metadata ?? null);
    checkBytes(text, 'service metadata', serviceMetadataBytesMax);
    requireSafe(session);
    const key = servicePrefix(service) + id;
    const put = await this.client.put(key, text, { lease: session.leaseId });
    const removed = new AbortController();
    return {
      key,
      revision: put.revision,
      signal: AbortSignal.any([session.signal, removed.signal]),
      deregister: async () => {
        removed.abort(new ClosedError(`${key} deregistered`));
        await this.client.delete(key, { ifRevision: put.revision }).catch(() => undefined);
      },
    };
  }

  /** A live set of the service's instances (list-at-R, then watch-after-R). */
  discover(service: string, options: { signal?: AbortSignal } = {}): ServiceSet {
    checkName(service, 'service name');
    return new ServiceSet(this.client, service, options.signal);
  }
}

type Instances = ReadonlyMap<string, ServiceInstance>;

const relistPolicy = {
  attemptsMax: 0,
  delayMsBase: 200,
  delayMsMax: 5_000,
  deadlineMs: 0,
  attemptTimeoutMs: 5_000,
};

/**
 * The instances of one service as of `revision`. Emits 'change' (the new map) after each applied
 * batch, 'error' for problems it recovers from by itself (kept serving the last known set).
 */
export class ServiceSet extends EventEmitter<{ change: [Instances]; error: [Error] }> {
  private current = new Map<string, ServiceInstance>();
  private syncedRevision = 0;
  private watch: Watch | null = null;
  private readonly controller = new AbortController();
  private resolveReady!: () => void;
  private rejectReady!: (error: Error) => void;
  /** Settles after the first listing (rejects only if the set is closed before it). */
  readonly ready: Promise<void>;
  /** Listings made (1 + re-listings after compaction or a failed watch). */
  listings = 0;
  private readonly prefix: string;

  constructor(
    private readonly client: BatonClient,
    readonly service: string,
    signal?: AbortSignal,
  ) {
    super();
    this.prefix = servicePrefix(service);
    this.ready = new Promise<void>((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ready.catch(() => undefined);
    signal?.addEventListener('abort', () => this.close(), { once: true });
    const forget = client.onClose(() => this.close());
    void this.run().finally(forget);
  }

  /** The last known instances by id (kept through interruptions). */
  get instances(): Instances {
    return this.current;
  }

  /** The set is exact as of this cell revision (0 before the first listing). */
  get revision(): number {
    return this.syncedRevision;
  }

  close(): void {
    if (this.controller.signal.aborted) return;
    this.controller.abort(new ClosedError('service set closed'));
    this.watch?.cancel();
    this.rejectReady(new ClosedError('service set closed before its first listing'));
  }

  private async run(): Promise<void> {
    const signal = this.controller.signal;
    for (let failures = 0; !signal.aborted; ) {
      try {
        await this.list();
        failures = 0;
        this.resolveReady();
        await this.follow();
      } catch (error) {
        if (signal.aborted) return;
        // Keep serving the last known set; list again (after compaction or a failure) shortly.
        if (!(error instanceof CompactedError)) {
          this.emitLater('error', error instanceof Error ? error : new Error(String(error)));
        }
        const delayMs = backoffDelayMs(relistPolicy, failures++, this.client.random);
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }

  private async list(): Promise<void> {
    const answer = await this.client.get(this.prefix, { prefix: true, limit: serviceInstancesMax });
    if (answer.more) {
      throw new InvalidArgumentError(`service ${this.service} has over ${serviceInstancesMax} instances`);
    }
    this.listings++;
    const next = new Map<string, ServiceInstance>();
    for (const kv of answer.kvs) next.set(idOf(kv.key, this.prefix), instanceOf(kv, this.prefix));
    const changed = !sameInstances(this.current, next);
    this.current = next;
    this.syncedRevision = answer.revision;
    if (changed || this.listings === 1) this.emitLater('change', this.current);
  }

  /** Applies the watch's batches until it ends (throws: compacted, closed, or a failure). */
  private async follow(): Promise<void> {
    const watch = this.client.watch(this.prefix, {
      prefix: true,
      startRevision: this.syncedRevision + 1,
      signal: this.controller.signal,
    });
    this.watch = watch;
    for await (const batch of watch) {
      const next = new Map(this.current);
      for (const event of batch.events) {
        const id = idOf(event.kv.key, this.prefix);
        if (event.type === 'delete') next.delete(id);
        else next.set(id, instanceOf(event.kv, this.prefix));
      }
      this.current = next;
      this.syncedRevision = batch.revision;
      this.emitLater('change', this.current);
    }
    if (!this.controller.signal.aborted) throw new Error('the watch ended');
  }

  /** Listeners run on their own turn, never inside the watch's delivery. */
  private emitLater(event: 'change', value: Instances): void;
  private emitLater(event: 'error', value: Error): void;
  private emitLater(event: 'change' | 'error', value: Instances | Error): void {
    setImmediate(() => {
      if (this.controller.signal.aborted) return;
      if (event === 'error') {
        if (this.listenerCount('error') > 0) this.emit('error', value as Error);
      } else this.emit('change', value as Instances);
    });
  }
}

function idOf(key: string, prefix: string): string {
  return key.slice(prefix.length);
}

function instanceOf(kv: KeyValue, prefix: string): ServiceInstance {
  let metadata: unknown;
  try {
    metadata = JSON.parse(kv.value);
  } catch {
    metadata = kv.value;
  }
  return { id: idOf(kv.key, prefix), metadata, lease: kv.lease, modRevision: kv.modRevision };
}

function sameInstances(a: Instances, b: Instances): boolean {
  if (a.size !== b.size) return false;
  for (const [id, instance] of a) if (b.get(id)?.modRevision !== instance.modRevision) return false;
  return true;
}
