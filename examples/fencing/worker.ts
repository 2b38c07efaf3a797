// A worker of the fencing example: takes the lock (or wins the election) named on the command
// line, then keeps writing its report to the store with its fencing token. Each step is printed
// as one JSON line, so a test (or a curious reader) can follow it.
//
//   node dist/examples/fencing/worker.js --endpoints URL[,URL] --store URL --name NAME [--elect] [--ttl S]
//
// Between deciding to write and the write leaving there is work to do (here a 300 ms "render"):
// a process frozen in that window (SIGSTOP, a GC pause, a VM migration) wakes up and sends a write
// it decided on as the owner. Only the store's token check can refuse it.
import { parseArgs } from 'node:util';
import { BatonClient } from '../../src/client/index.js';

const { values } = parseArgs({
  options: {
    endpoints: { type: 'string', default: 'http://127.0.0.1:7001' },
    store: { type: 'string' },
    name: { type: 'string', default: 'report-42' },
    elect: { type: 'boolean', default: false },
    ttl: { type: 'string', default: '5' },
    writes: { type: 'string', default: '1000' },
  },
});
const say = (event: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify({ pid: process.pid, ...event })}\n`);
};

const client = new BatonClient({ endpoints: (values.endpoints as string).split(',') });
const session = await client.session({ ttlSeconds: Number(values.ttl) });
const name = values.name as string;
let token: number;
if (values.elect) {
  const leadership = await client.election(session, name).campaign(`worker-${process.pid}`, { waitMs: 60_000 });
  token = leadership.term;
} else {
  const lock = await client.locks(session).acquire(name, { waitMs: 60_000, owner: `worker-${process.pid}` });
  token = lock.token;
}
say({ event: 'owner', token });

for (let i = 0; i < Number(values.writes); i++) {
  const body = `report by ${process.pid} (write ${i})`;
  await new Promise((resolve) => setTimeout(resolve, 300)); // "rendering" the report
  const res = await fetch(`${values.store}/reports/${name}`, {
    method: 'PUT',
    headers: { 'fencing-token': String(token) },
    body,
  });
  say({ event: 'write', token, status: res.status, answer: await res.text() });
}
await session.close().catch(() => undefined);
await client.close();
