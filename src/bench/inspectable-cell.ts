// What the lease and capacity benches share: a 3-process cell whose members each take an inspector
// port (heap and CPU profiles of the members themselves), a member's anonymous RSS, and a small
// JSON-over-HTTP call on a keep-alive agent.
import { mkdtempSync, readFileSync } from 'node:fs';
import { type Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessCell } from '../node/testing/process-cell.js';
import { freePorts } from './ports.js';

export interface InspectableCell {
  readonly cell: ProcessCell;
  readonly dataDir: string;
  readonly names: readonly string[];
  inspectPort(name: string): number;
}

/**
 * Started, not waited for: the caller waits for readiness within its own bound. `cliPath`: the
 * members run another build's CLI (DIR/dist/src/cli/main.js); absent: this build's.
 */
export async function startInspectableCell(dataDirPrefix: string, cliPath?: string): Promise<InspectableCell> {
  const dataDir = mkdtempSync(join(tmpdir(), dataDirPrefix));
  const ports = await freePorts(9);
  const names = ['n1', 'n2', 'n3'];
  const inspectPort = (name: string): number => ports[6 + names.indexOf(name)] as number;
  const cell = new ProcessCell({
    dataDir,
    members: names.map((name, i) => ({ name, clientPort: ports[i] as number, peerPort: ports[3 + i] as number })),
    // No bytecode flushing: V8 drops the bytecode of functions unused for a while (startup
    // code), megabytes that would otherwise leave the heap between the before and after
    // measurements and hide the measured items' own memory.
    nodeArgs: (name) => [`--inspect=127.0.0.1:${inspectPort(name)}`, '--no-flush-bytecode'],
    output: 'pipe',
    ...(cliPath === undefined ? {} : { cliPathFor: () => cliPath }),
  });
  cell.startAll();
  return { cell, dataDir, names, inspectPort };
}

export function rssAnonKiB(pid: number): number {
  return Number(/RssAnon:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
}

/** A string body goes as it is; anything else as JSON (with its content type). */
export function httpJson(
  agent: Agent,
  base: string,
  method: string,
  path: string,
  body?: unknown,
  extraHeaders: Record<string, string> = {},
  timeoutMs = 10_000,
): Promise<{ status: number; body: any }> {
  const url = new URL(path, base);
  const raw = typeof body === 'string';
  const data = body === undefined ? undefined : Buffer.from(raw ? body : JSON.stringify(body));
  const headers = data === undefined ? extraHeaders
    : { ...extraHeaders, ...(raw ? {} : { 'content-type': 'application/json' }), 'content-length': String(data.length) };
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: url.hostname, port: url.port, method, path: url.pathname + url.search, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, body: text.startsWith('{') ? JSON.parse(text) : text });
      });
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(data);
  });
}
