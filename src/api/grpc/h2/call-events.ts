// The event methods a call gives its handler (grpc-js's server-call shape: on, once, off, emit),
// shared by the gRPC call and the gateway's: listeners kept by the call itself, the map made only
// when a handler listens (a unary call usually never does), no EventEmitter.
type Listener = (...args: never[]) => void;

export class CallEvents {
  private listeners: Map<string, Listener[]> | null = null;

  on(event: string, listener: Listener): this {
    this.listeners ??= new Map();
    const list = this.listeners.get(event);
    if (list === undefined) this.listeners.set(event, [listener]);
    else list.push(listener);
    return this;
  }

  once(event: string, listener: Listener): this {
    const wrapper = (...args: never[]): void => {
      this.off(event, wrapper);
      listener(...args);
    };
    return this.on(event, wrapper);
  }

  off(event: string, listener: Listener): this {
    const list = this.listeners?.get(event);
    const at = list?.indexOf(listener) ?? -1;
    if (list !== undefined && at >= 0) list.splice(at, 1);
    return this;
  }

  /** Calls the listeners of `event`; false when it has none. */
  emit(event: string, ...args: unknown[]): boolean {
    const list = this.listeners?.get(event);
    if (list === undefined || list.length === 0) return false;
    for (const listener of [...list]) (listener as (...values: unknown[]) => void)(...args);
    return true;
  }
}
