// Reading a Server-Sent Events answer (election observe): each `data:` line is one JSON value.
// Parsing runs as the bytes arrive; what the caller does with a value happens in its own loop,
// after the iterator handed it over, never inside the socket's data handler.
import { TooLargeError } from '../base/errors.js';
import { errorFromHttp } from './errors.js';

/** One line longer than this is refused (a misbehaving server cannot grow our memory). */
const lineBytesMax = 1024 * 1024;

export async function* sseData(
  url: string,
  signal: AbortSignal,
  connectTimeoutMs: number,
): AsyncGenerator<unknown, void, undefined> {
  // The timeout covers the answer's headers only: the stream itself may stay quiet for long.
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`no answer in ${connectTimeoutMs} ms`)), connectTimeoutMs);
  const connect = AbortSignal.any([signal, controller.signal]);
  let response: Response;
  try {
    response = await fetch(url, { headers: { accept: 'text/event-stream' }, signal: connect });
  } finally {
    clearTimeout(timer);
  }
  if (response.status !== 200) throw errorFromHttp(response.status, await response.text());
  if (response.body === null) return;
  const decoder = new TextDecoder();
  let pending = '';
  const reader = response.body.getReader();
  const cancel = (): void => void reader.cancel().catch(() => undefined);
  signal.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      pending += decoder.decode(value, { stream: true });
      let newline = pending.indexOf('\n');
      while (newline >= 0) {
        const line = pending.slice(0, newline).replace(/\r$/, '');
        pending = pending.slice(newline + 1);
        if (line.startsWith('data:')) yield JSON.parse(line.slice(5).trim()) as unknown;
        newline = pending.indexOf('\n');
      }
      if (pending.length > lineBytesMax) throw new TooLargeError('an SSE line', pending.length, lineBytesMax);
    }
  } finally {
    signal.removeEventListener('abort', cancel);
    cancel();
  }
}
