// GET /livez and /readyz (and /livez/<check>, /readyz/<check>) on the native HTTP port: etcd's
// checks, query and text answers (src/api/health.ts). `?verbose` lists every check run, and
// `?exclude=<check>` (repeatable) leaves one out; any other parameter is refused, as on every
// native route. /healthz stays in handler.ts as it was.
import { healthTarget, runHealth, type HealthChecks } from '../health.js';
import type { RouteGroup } from './handler.js';

export function createHealthRoutes(checks: HealthChecks): RouteGroup {
  return async (request) => {
    const target = healthTarget(checks, request.url.pathname);
    if (target === null || request.method !== 'GET') return false;
    const verbose = request.url.searchParams.has('verbose');
    const exclude = new Set(request.url.searchParams.getAll('exclude').filter((name) => name !== ''));
    // Marks both as read (the flag's value is not checked: etcd reads only its presence).
    request.query.string('verbose');
    request.query.string('exclude');
    request.query.rejectUnknown();
    const answer = await runHealth(checks, target, { exclude, verbose });
    request.res.writeHead(answer.status, {
      'content-type': 'text/plain; charset=utf-8',
      'x-content-type-options': 'nosniff',
      'content-length': Buffer.byteLength(answer.body),
      'baton-revision': String(request.context.revision()),
      'baton-cell': request.context.cellId,
    });
    request.res.end(answer.body);
    return true;
  };
}
