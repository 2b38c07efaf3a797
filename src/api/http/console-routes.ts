// GET /ui/ on the native HTTP port: the web console's files (src/console, docs/console.md).
import { consoleAnswer, isConsolePath, type ConsoleFiles } from '../../console/console-files.js';
import type { RouteGroup } from './handler.js';

export function createConsoleRoutes(files: ConsoleFiles): RouteGroup {
  return async (request) => {
    const path = request.url.pathname;
    if (!isConsolePath(path)) return false;
    request.query.rejectUnknown();
    const answer = consoleAnswer(files, request.method, path, request.req.headers['if-none-match']);
    request.res.writeHead(answer.status, { ...answer.headers, 'baton-cell': request.context.cellId });
    request.res.end(answer.body ?? undefined);
    return true;
  };
}
