// The production HTTP door: Node's fetch, with a per-attempt timeout. A timeout or a dropped
// connection throws (the caller turns it into `timeout`/`unavailable` and may retry).
import type { HttpAnswer, HttpRequest, HttpTransport } from './types.js';

export const fetchTransport: HttpTransport = async (request: HttpRequest): Promise<HttpAnswer> => {
  const response = await fetch(request.url, {
    method: request.method,
    headers: request.headers,
    ...(request.body === undefined ? {} : { body: request.body }),
    signal:
      request.signal === undefined
        ? AbortSignal.timeout(request.timeoutMs)
        : AbortSignal.any([AbortSignal.timeout(request.timeoutMs), request.signal]),
  });
  const text = await response.text();
  return { status: response.status, header: (name) => response.headers.get(name), text };
};
