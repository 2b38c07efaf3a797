// The web console's files (docs/console.md) and the answer to a GET of one of them, for every
// server that serves /ui/: a node's native port (src/api/http/console-routes.ts) and the router.
// The files are read once, at start, into a table keyed by their names: a request is answered only
// for a name in that table, so no path a client sends (dot segments, encoded slashes, symlinks)
// can reach a file outside the folder. The console's data comes from the ordinary API in the
// browser, under the caller's own credentials: the files carry no data and decide nothing.
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError } from '../base/errors.js';

/** One file the console serves. */
export interface ConsoleFile {
  readonly body: Buffer;
  readonly contentType: string;
  readonly etag: string;
}

/** The files by their path below /ui/ ('index.html', 'app.js', ...). */
export type ConsoleFiles = ReadonlyMap<string, ConsoleFile>;

const contentTypes: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
};

/** The console's files, at most this many and this large together: it is a handful of small files. */
const consoleFilesMax = 200;
const consoleBytesMax = 8 * 1024 * 1024;

/**
 * The page may load its own scripts and styles and talk to this origin only: no inline script,
 * no eval, no frame around it (so an injected key value can never run as code).
 */
export const consoleCsp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Where the build puts the console: dist/ui, beside dist/src (this file is dist/src/console/). */
export function consoleDir(): string {
  return fileURLToPath(new URL('../../ui/', import.meta.url));
}

/**
 * Reads the console's folder (regular files of known types only). A missing folder gives an empty table:
 * the server runs, and /ui/ says that the console was not built.
 */
export function loadConsoleFiles(dir = consoleDir()): ConsoleFiles {
  const files = new Map<string, ConsoleFile>();
  let bytes = 0;
  const visit = (relative: string): void => {
    let names: string[];
    try {
      names = readdirSync(join(dir, relative)).sort();
    } catch {
      return;
    }
    for (const name of names) {
      const path = relative === '' ? name : `${relative}/${name}`;
      // lstat: a symbolic link is neither followed nor served, so nothing outside the folder is.
      const stat = lstatSync(join(dir, path));
      if (stat.isDirectory()) {
        visit(path);
        continue;
      }
      const contentType = contentTypes[extname(name)];
      if (!stat.isFile() || contentType === undefined) continue;
      const body = readFileSync(join(dir, path));
      bytes += body.length;
      if (files.size >= consoleFilesMax || bytes > consoleBytesMax) {
        throw new Error(`the console folder ${dir} holds more than ${consoleFilesMax} files or ${consoleBytesMax} bytes`);
      }
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
      files.set(path, { body, contentType, etag });
    }
  };
  visit('');
  return files;
}

export interface ConsoleAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | number>>;
  readonly body: Buffer | null;
}

/** Whether a request path (before any query) is the console's. */
export function isConsolePath(path: string): boolean {
  return path === '/ui' || path.startsWith('/ui/');
}

/**
 * The answer to `method path` (a console path, raw as sent); throws invalid_argument (the API's
 * answer to an unknown endpoint) for another method or a name that is not in the table.
 */
export function consoleAnswer(files: ConsoleFiles, method: string, path: string, ifNoneMatch: string | undefined): ConsoleAnswer {
  if (method !== 'GET' && method !== 'HEAD') throw new InvalidArgumentError(`no such endpoint: ${method} ${path}`);
  if (path === '/ui') return { status: 308, headers: { location: '/ui/', 'content-length': 0 }, body: null };
  const name = path === '/ui/' ? 'index.html' : path.slice('/ui/'.length);
  const file = files.get(name);
  if (file === undefined) {
    throw new InvalidArgumentError(files.size === 0
      ? 'the web console is not built (npm run build writes dist/ui)'
      : `no such console file: ${path}`);
  }
  const headers = {
    'content-type': file.contentType,
    // Revalidated on every load (an upgraded server serves new files at once), cheap by ETag.
    'cache-control': 'no-cache',
    etag: file.etag,
    'content-security-policy': consoleCsp,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
  };
  if (ifNoneMatch === file.etag) return { status: 304, headers, body: null };
  return { status: 200, headers: { ...headers, 'content-length': file.body.length }, body: method === 'HEAD' ? null : file.body };
}
