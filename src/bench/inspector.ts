// A minimal Chrome DevTools Protocol client for a node started with --inspect=HOST:PORT, so a
// bench can measure a server process from outside without any debug endpoint in the server:
// its heap after a full GC (memory per lease, per watcher) and a CPU profile of a chosen window.
import WebSocket from 'ws';

interface Pending {
  readonly resolve: (result: unknown) => void;
  readonly reject: (error: Error) => void;
}

export class InspectorSession {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const message = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } };
      if (message.id === undefined) return; // an event: none are enabled
      const call = this.pending.get(message.id);
      if (call === undefined) return;
      this.pending.delete(message.id);
      if (message.error !== undefined) call.reject(new Error(message.error.message));
      else call.resolve(message.result);
    });
    ws.on('close', () => {
      for (const call of this.pending.values()) call.reject(new Error('inspector closed'));
      this.pending.clear();
    });
  }

  /** Attaches to the process listening for the inspector on host:port. */
  static async connect(host: string, port: number): Promise<InspectorSession> {
    const targets = (await (await fetch(`http://${host}:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
    const url = targets[0]?.webSocketDebuggerUrl;
    if (url === undefined) throw new Error(`no inspector target on ${host}:${port}`);
    const ws = new WebSocket(url, { maxPayload: 1 << 30 });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    return new InspectorSession(ws);
  }

  call<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (result: unknown) => void, reject });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Bytes of live JS heap after full collections (twice: the first may leave weak garbage). */
  async heapUsedAfterGc(): Promise<number> {
    await this.call('HeapProfiler.collectGarbage');
    await this.call('HeapProfiler.collectGarbage');
    return (await this.call<{ usedSize: number }>('Runtime.getHeapUsage')).usedSize;
  }

  async startProfile(samplingIntervalUs = 1000): Promise<void> {
    await this.call('Profiler.enable');
    await this.call('Profiler.setSamplingInterval', { interval: samplingIntervalUs });
    await this.call('Profiler.start');
  }

  /** The .cpuprofile JSON of the window since startProfile. */
  async stopProfile(): Promise<unknown> {
    const { profile } = await this.call<{ profile: unknown }>('Profiler.stop');
    await this.call('Profiler.disable');
    return profile;
  }

  /**
   * Samples allocations (one per `intervalBytes` on average) until stopAllocationSampling,
   * counting objects that young and old collections free too: what a put allocates, not what
   * it keeps.
   */
  async startAllocationSampling(intervalBytes = 16 * 1024): Promise<void> {
    await this.call('HeapProfiler.enable');
    await this.call('HeapProfiler.startSampling', {
      samplingInterval: intervalBytes,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  }

  async stopAllocationSampling(): Promise<unknown> {
    const { profile } = await this.call<{ profile: unknown }>('HeapProfiler.stopSampling');
    await this.call('HeapProfiler.disable');
    return profile;
  }

  close(): void {
    this.ws.terminate();
  }
}
