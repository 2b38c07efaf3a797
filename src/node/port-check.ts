// Before a node (or the dev cell) starts anything, each port it will listen on is bound once and
// released: a taken port then stops it at once with a message naming the port and its flag,
// rather than half a node that opened its files and then died on EADDRINUSE (or, for the dev
// cell, a readiness check answered by whoever holds the port).
import { createServer } from 'node:net';

export interface PlannedListener {
  /** What listens there, as the user named it: `--listen-client http://127.0.0.1:7001`. */
  readonly what: string;
  readonly host: string;
  readonly port: number;
}

/** Why the first taken port cannot be used, naming it; null when every port is free. */
export async function takenPortProblem(listeners: readonly PlannedListener[]): Promise<string | null> {
  for (const listener of listeners) {
    if (listener.port === 0) continue; // the OS picks one: never taken
    const code = await tryBind(listener.host, listener.port);
    if (code === null) continue;
    const why = code === 'EADDRINUSE' ? 'is already in use (another Baton node or cell, or another program, holds it)'
      : code === 'EACCES' ? 'may not be bound by this user'
        : code === 'EADDRNOTAVAIL' ? `cannot be bound: ${listener.host} is not an address of this machine`
          : `cannot be bound (${code})`;
    return `port ${listener.port} on ${listener.host} (${listener.what}) ${why}`;
  }
  return null;
}

/** The host as net.listen takes it: URL.hostname keeps an IPv6 address's brackets. */
export function listenHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

function tryBind(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(null)));
  });
}
