// What every answer must look like (../shared/spec/api.md, docs/api/README.md): a documented
// status; on an error, a JSON body {"error": {"code", "message"}} whose code is in the one error
// table with that very status; the Baton-Revision and Baton-Cell headers on every answer.
import { errorTable, httpStatusByCode, isErrorCode } from '../base/errors.js';

export interface HttpAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

const documentedStatuses = new Set([200, 201, ...Object.values(httpStatusByCode)]);

/** The first problem with an answer, or null when it is as documented. */
export function checkHttpAnswer(answer: HttpAnswer, options: { upgrade: boolean; head: boolean }): string | null {
  if (answer.status === 101 && options.upgrade) return null;
  if (!documentedStatuses.has(answer.status)) return `undocumented status ${answer.status}`;
  if (answer.headers['baton-revision'] === undefined || !/^\d+$/.test(answer.headers['baton-revision'])) {
    return 'no Baton-Revision header';
  }
  if (answer.headers['baton-cell'] === undefined) return 'no Baton-Cell header';
  if (answer.status < 400 || options.head) return null;
  if (!(answer.headers['content-type'] ?? '').startsWith('application/json')) {
    return `error ${answer.status} is ${answer.headers['content-type'] ?? 'without a content type'}, not JSON`;
  }
  return checkErrorJson(answer.body.toString('utf8'), answer.status);
}

export function checkErrorJson(text: string, status: number | null): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return `error body is not JSON: ${JSON.stringify(text.slice(0, 120))}`;
  }
  const error = (parsed as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return checkErrorObject(error, status);
}

/** An error object of an answer or a stream frame: a documented code (with its status), a message. */
export function checkErrorObject(error: { code?: unknown; message?: unknown } | undefined, status: number | null): string | null {
  if (typeof error !== 'object' || error === null) return 'no "error" object';
  const code = error.code;
  if (typeof code !== 'string') return 'error without a code';
  if (!isErrorCode(code)) return `undocumented error code ${code}`;
  const expected = errorTable[code].http;
  if (status !== null && expected !== status) return `code ${code} answered with ${status}, documented ${expected ?? 'never an HTTP answer'}`;
  if (typeof error.message !== 'string') return `error ${code} without a message`;
  return null;
}
