// The client's source address (IP:port) of the request being served, for the audit log
// (docs/security.md "Audit log"): every edge (HTTP, the stream, the gRPC facade, the gateway) runs
// a request's handling inside `withSource`, and the node's proposer reads `currentSource()` when it
// encodes a write, so the address travels in the command envelope to apply time (where audit
// records are decided) without a parameter through every service. AsyncLocalStorage follows the
// request across its awaits; a read outside any request (the cell's own work) sees undefined.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Socket } from 'node:net';

const source = new AsyncLocalStorage<string>();
const bySocket = new WeakMap<Socket, string>();
// Off unless a node has an audit log: AsyncLocalStorage turns on Node's promise hooks for the
// whole process once used, a cost every request would pay for addresses nobody records.
let tracking = false;

/** Called once by a node with an audit log: from then on every edge records the source address. */
export function trackSources(): void {
  tracking = true;
}

/** "IP:port" of a socket's peer ("[v6]:port" for IPv6), read once per socket. */
export function sourceOfSocket(socket: Socket): string {
  const known = bySocket.get(socket);
  if (known !== undefined) return known;
  const ip = socket.remoteAddress ?? 'unknown';
  const address = `${ip.includes(':') ? `[${ip}]` : ip}:${socket.remotePort ?? 0}`;
  bySocket.set(socket, address);
  return address;
}

export function withSource<T>(socket: Socket | null | undefined, run: () => T): T {
  return !tracking || socket === null || socket === undefined ? run() : source.run(sourceOfSocket(socket), run);
}

/** The source address of the request being served here, or undefined. */
export function currentSource(): string | undefined {
  return source.getStore();
}
