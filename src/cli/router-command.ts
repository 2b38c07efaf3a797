// `baton router --control URL,... --listen URL`: a stateless router in front of the cells
// (docs/design/cells.md). Runs until SIGINT/SIGTERM.
import { parseArgs } from 'node:util';
import { Router } from '../router/router.js';

const usage = `usage: baton router --control URL,URL,... [--listen URL]
  Serves the native HTTP API and forwards each request to the cell owning its namespace.
  --control URLS   the control plane's client URLs (or BATON_ROUTER_CONTROL)
  --listen URL     where to serve, default http://127.0.0.1:7000 (or BATON_ROUTER_LISTEN)
  The WebSocket stream (/v1/stream) is routed frame by frame; the etcd gRPC facade is not routed
  yet: use a cell directly.`;

export async function routerCommand(args: readonly string[]): Promise<number> {
  let values;
  try {
    values = parseArgs({ args: [...args], options: { control: { type: 'string' }, listen: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, strict: true }).values;
  } catch (error) {
    console.error(`baton router: ${(error as Error).message}\n\n${usage}`);
    return 2;
  }
  if (values.help === true) {
    console.log(usage);
    return 0;
  }
  const control = (values.control ?? process.env['BATON_ROUTER_CONTROL'] ?? '').split(',').map((u) => u.trim()).filter((u) => u !== '');
  let listen: URL;
  try {
    listen = new URL(values.listen ?? process.env['BATON_ROUTER_LISTEN'] ?? 'http://127.0.0.1:7000');
  } catch {
    console.error(`baton router: --listen must be a URL like http://127.0.0.1:7000\n\n${usage}`);
    return 2;
  }
  if (control.length === 0 || listen.protocol !== 'http:') {
    console.error(`baton router: needs --control URL,... and an http:// --listen\n\n${usage}`);
    return 2;
  }
  const router = new Router({ control, host: listen.hostname, port: Number(listen.port || 80), log: (m) => console.error(`router: ${m}`) });
  const { url } = await router.start();
  console.log(`Baton router ready: ${url} (control ${control.join(',')})`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await router.stop();
  return 0;
}
