// The web console (docs/console.md): GET /ui/ serves the static files the build put in dist/ui.
// The files are read once, when the node starts, into a table keyed by their names: a request is
// answered only for a name in that table, so no path a client sends (dot segments, encoded
// slashes, symlinks) can reach a file outside the folder. The console's data comes from the
// ordinary API in the browser, under the caller's own credentials: the files carry no data and
// decide nothing.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { InvalidArgumentError } from '../../base/errors.js';
import type { RouteGroup } from './handler.js';

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

/**
 * Reads the console's folder (files of known types, source maps left out). A missing folder gives
 * an empty table: the node runs, and /ui/ says that the console was not built.
 */
export function loadConsoleFiles(dir: string): ConsoleFiles {
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
      const stat = statSync(join(dir, path));
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

export function createConsoleRoutes(files: ConsoleFiles): RouteGroup {
  return async (request) => {
    const { res, method } = request;
    const path = request.url.pathname;
    if (path !== '/ui' && !path.startsWith('/ui/')) return false;
    if (method !== 'GET' && method !== 'HEAD') throw new InvalidArgumentError(`no such endpoint: ${method} ${path}`);
    request.query.rejectUnknown();
    if (path === '/ui') {
      res.writeHead(308, { location: '/ui/', 'content-length': 0 });
      res.end();
      return true;
    }
    const name = path === '/ui/' ? 'index.html' : path.slice('/ui/'.length);
    const file = files.get(name);
    if (file === undefined) {
      throw new InvalidArgumentError(files.size === 0
        ? 'the web console is not built (npm run build writes dist/ui)'
        : `no such console file: ${path}`);
    }
    const headers: Record<string, string | number> = {
      'content-type': file.contentType,
      // Revalidated on every load (an upgraded node serves new files at once), cheap by ETag.
      'cache-control': 'no-cache',
      etag: file.etag,
      'content-security-policy': consoleCsp,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
      'baton-cell': request.context.cellId,
    };
    if (request.req.headers['if-none-match'] === file.etag) {
      res.writeHead(304, headers);
      res.end();
      return true;
    }
    res.writeHead(200, { ...headers, 'content-length': file.body.length });
    res.end(method === 'HEAD' ? undefined : file.body);
    return true;
  };
}
