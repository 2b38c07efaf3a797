// The protected resource of the fencing example: a tiny report store that accepts a write only
// with a fencing token at least as high as any it has accepted for that report. The check and
// the remembering are one LMDB transaction (src/fencing), kept across restarts of the store.
//
// Without this check, the lock alone cannot stop a paused former owner: after SIGCONT its write
// still leaves, and arrives after the new owner's.
import { createServer, type Server } from 'node:http';
import { LmdbFencingGuard } from '../../src/fencing/index.js';

export interface ReportStore {
  readonly url: string;
  /** The last accepted write per report: the writer's text and token. */
  readonly reports: Map<string, { body: string; token: number }>;
  /** Every write attempt, accepted or not, in arrival order. */
  readonly attempts: { report: string; token: number; accepted: boolean }[];
  close(): Promise<void>;
}

export async function startReportStore(directory: string, port = 0): Promise<ReportStore> {
  const guard = LmdbFencingGuard.open(directory);
  const reports = new Map<string, { body: string; token: number }>();
  const attempts: { report: string; token: number; accepted: boolean }[] = [];
  const server: Server = createServer((req, res) => {
    const match = /^\/reports\/([\w.-]+)$/.exec(req.url ?? '');
    const token = Number(req.headers['fencing-token']);
    if (req.method !== 'PUT' || match === null || !Number.isSafeInteger(token) || token < 1) {
      res.writeHead(400).end('PUT /reports/NAME with a Fencing-Token header\n');
      return;
    }
    const report = match[1] as string;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      // The whole point: the token decides, not who thinks it holds the lock.
      const verdict = guard.check(`reports/${report}`, token);
      attempts.push({ report, token, accepted: verdict.accepted });
      if (!verdict.accepted) {
        res.writeHead(409, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'stale fencing token', token, highest: verdict.highest }));
        return;
      }
      reports.set(report, { body: Buffer.concat(chunks).toString('utf8'), token });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, token }));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    reports,
    attempts,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await guard.close();
    },
  };
}
