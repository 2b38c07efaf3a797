// One WebSocket session on /v1/stream: the case's frames, then a probe (a plain get) that must
// still be answered, unless the node closed the session with a documented close code. Every
// frame the node sends must be JSON; every error in one a documented code (never "internal").
import WebSocket from 'ws';
import type { FuzzCase } from './cases.js';
import { checkErrorObject } from './checks.js';
import type { ExchangeResult } from './http-exchange.js';

type StreamCase = Extract<FuzzCase, { channel: 'stream' }>;

/** Close codes a node may end a hostile session with (RFC 6455 section 7.4.1). */
const documentedCloseCodes = new Set([1000, 1001, 1002, 1003, 1007, 1008, 1009]);
const probeId = 'fuzz-probe';

export function runStreamCase(port: number, fuzzCase: StreamCase, probeKey: string, timeoutMs: number): Promise<ExchangeResult> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/stream`, { handshakeTimeout: timeoutMs });
    let settled = false;
    const timer = setTimeout(() => finish(`the probe got no answer within ${timeoutMs} ms (hang)`), timeoutMs);
    const finish = (problem: string | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      ws.terminate();
      resolve({ problem, status: null });
    };
    ws.on('error', (error) => finish(`stream error: ${error.message}`));
    ws.on('open', () => {
      for (const frame of fuzzCase.frames) ws.send(frame);
      ws.send(JSON.stringify({ id: probeId, type: 'get', key: probeKey }));
    });
    ws.on('message', (data, isBinary) => {
      if (isBinary) return finish('a binary frame from the node');
      let message: { id?: unknown; type?: unknown; error?: { code?: unknown; message?: unknown } };
      try {
        message = JSON.parse(String(data));
      } catch {
        return finish(`a frame that is not JSON: ${String(data).slice(0, 120)}`);
      }
      if (message.type === 'error') {
        const problem = checkErrorObject(message.error, null);
        if (problem !== null) return finish(`error frame: ${problem}`);
        if (message.id === probeId) return finish(`the probe failed: ${JSON.stringify(message.error).slice(0, 200)}`);
      }
      if (message.id === probeId && message.type === 'result') finish(null);
    });
    ws.on('close', (code, reason) => {
      if (documentedCloseCodes.has(code)) finish(null);
      else finish(`session closed with code ${code} ${reason.toString().slice(0, 100)}`);
    });
  });
}
