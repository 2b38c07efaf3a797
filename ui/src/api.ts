// Calls to the node's native API from the page, as the browser's user: the connection's client
// certificate (the browser presents it) or a token the user signed in for, kept in this tab's
// sessionStorage. A refused call is shown as the API's own error; nothing is retried around it.

const tokenKey = 'baton.console.token';

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

export function token(): string | null {
  return sessionStorage.getItem(tokenKey);
}

export function setToken(value: string | null): void {
  if (value === null) sessionStorage.removeItem(tokenKey);
  else sessionStorage.setItem(tokenKey, value);
}

export function authHeaders(): Record<string, string> {
  const current = token();
  return current === null ? {} : { authorization: `Bearer ${current}` };
}

/** The API's error body, or the status line when the answer is not one. */
export async function errorOf(response: Response): Promise<ApiError> {
  try {
    const body = (await response.json()) as { error?: { code?: string; message?: string } };
    if (body.error !== undefined) return new ApiError(response.status, body.error.code ?? 'error', body.error.message ?? '');
  } catch {
    // not JSON: fall through
  }
  return new ApiError(response.status, `http_${response.status}`, response.statusText);
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const response = await fetch(path, { headers: authHeaders(), credentials: 'same-origin', ...(signal ? { signal } : {}) });
  if (!response.ok) throw await errorOf(response);
  return (await response.json()) as T;
}

export async function getText(path: string): Promise<string> {
  const response = await fetch(path, { headers: authHeaders(), credentials: 'same-origin' });
  if (!response.ok) throw await errorOf(response);
  return response.text();
}

/** The one POST the console makes: signing in, which changes nothing in the cell. */
export async function signIn(name: string, password: string): Promise<void> {
  const response = await fetch('/v1/auth/authenticate', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, password }),
  });
  if (!response.ok) throw await errorOf(response);
  setToken(((await response.json()) as { token: string }).token);
}

/** A key's path below /v1/kv: each segment percent-encoded, the slashes kept. */
export function kvPath(key: string): string {
  return `/v1/kv${key.split('/').map(encodeURIComponent).join('/')}`;
}

export function describe(error: unknown): string {
  if (error instanceof ApiError) return `${error.status} ${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

// Shapes of the answers the console reads (docs/api/*.md).
export interface Kv {
  key: string;
  value: string;
  version: number;
  createRevision: number;
  modRevision: number;
  lease: number;
}

export interface Range {
  revision: number;
  count: number;
  more: boolean;
  kvs: Kv[];
}

export interface WatchEvent {
  type: 'put' | 'delete';
  kv: Kv;
}
