// A loopback TCP relay for the snapshot transfer tests: what a client sends passes through the
// test's own forwarder (to cut or corrupt a connection mid-way), what comes back passes untouched.
import { connect, createServer, type Server, type Socket } from 'node:net';

/** Forwards one chunk the client sent; `upstream.write(chunk)` passes it on. */
export type Forwarder = (chunk: Buffer, client: Socket, upstream: Socket) => void;

/** Listens on a free port and relays to `target`; `forwarderFor(n)` serves the n-th connection (from 0). */
export async function startRelay(
  target: { host: string; port: number },
  forwarderFor: (connection: number) => Forwarder,
): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((client) => {
    const forward = forwarderFor(connections++);
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => (client.destroy(), upstream.destroy()));
    }
    client.on('data', (chunk: Buffer) => forward(chunk, client, upstream));
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
