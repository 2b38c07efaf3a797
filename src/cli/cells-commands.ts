// `baton cells list|add` and `baton ns create|list|show|delete`: the control plane's cell map
// (docs/api/control.md), through --endpoints at the control plane or a router (which forwards
// /v1/control to it).
import { errorFromWire, fetchTransport, httpsTransport, type HttpAnswer, type HttpRequest } from '../client/index.js';
import { exitCodes, parseCommand, parsedClientTls, printJson, printTable, requirePositionals, runWithClient, UsageError } from './client-command.js';

const cellsHelp = `usage: baton cells list
       baton cells add ID --cell-endpoints URL,URL,...
  Lists the cells of the cell map, or adds a data cell (its members' client URLs); the first cell
  added owns the root namespace /. --endpoints: the control plane or a router.`;
const nsHelp = `usage: baton ns create PREFIX --cell CELL
       baton ns list
       baton ns show PREFIX
       baton ns delete PREFIX
       baton ns move PREFIX --to CELL [--wait]
       baton ns move-abort PREFIX
  Namespaces are key prefixes ending in /, each owned by one cell under a routing epoch; a key
  belongs to the longest namespace that starts it (else the root /). --endpoints: the control
  plane or a router. A move copies the namespace's keys (revisions, leases) to CELL, fences the
  source, flips the routing epoch and releases the source; --wait returns when it is released
  (or aborted). move-abort works until the flip. ns show prints the latest move's phase.`;

const movePollMs = 200;
/** --wait gives up after this long (the move keeps going; ns show follows it). */
const moveWaitMaxMs = 10 * 60_000;

export const cellsCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(cellsHelp, args, async () => {
    const { positionals, format, endpoints, values } = parseCommand(args, { 'cell-endpoints': { type: 'string' } });
    requirePositionals(positionals, 1, 2, '"list" or "add ID"');
    const action = positionals[0];
    if (action === 'list') {
      requirePositionals(positionals, 1, 1, '"list"');
      const answer = (await call(endpoints, 'GET', '/v1/control/cells')) as { epoch: number; cells: { id: string; endpoints: string[] }[] };
      if (format === 'json') printJson(answer);
      else if (format === 'table') printTable(['CELL', 'ENDPOINTS'], answer.cells.map((c) => [c.id, c.endpoints.join(',')]));
      else for (const cell of answer.cells) console.log(`${cell.id}, ${cell.endpoints.join(',')}`);
      return exitCodes.ok;
    }
    if (action !== 'add') throw new UsageError(`unknown cells action ${String(action)}`);
    requirePositionals(positionals, 2, 2, '"add ID"');
    const list = (values['cell-endpoints'] as string | undefined)?.split(',').map((u) => u.trim()).filter((u) => u !== '');
    if (list === undefined || list.length === 0) throw new UsageError('cells add needs --cell-endpoints URL,...');
    const answer = await call(endpoints, 'POST', '/v1/control/cells', { id: positionals[1], endpoints: list });
    printResult(format, answer, `cell ${String(positionals[1])} added`);
    return exitCodes.ok;
  });

export const nsCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(nsHelp, args, async () => {
    const { positionals, format, endpoints, values } = parseCommand(args, { cell: { type: 'string' }, to: { type: 'string' }, wait: { type: 'boolean' } });
    requirePositionals(positionals, 1, 2, '"create PREFIX", "list", "show PREFIX" or "delete PREFIX"');
    const [action, prefix] = positionals;
    if (action === 'list') {
      requirePositionals(positionals, 1, 1, '"list"');
      const map = (await call(endpoints, 'GET', '/v1/control/namespaces')) as { epoch: number; namespaces: { prefix: string; cell: string; epoch: number; state: string }[] };
      if (format === 'json') printJson(map);
      else if (format === 'table') printTable(['NAMESPACE', 'CELL', 'EPOCH', 'STATE'], map.namespaces.map((n) => [n.prefix, n.cell, n.epoch, n.state]));
      else for (const n of map.namespaces) console.log(`${n.prefix}, ${n.cell}, epoch ${n.epoch}, ${n.state}`);
      return exitCodes.ok;
    }
    requirePositionals(positionals, 2, 2, `"${String(action)} PREFIX"`);
    const path = `/v1/control/namespaces${(prefix as string).split('/').map(encodeURIComponent).join('/')}`;
    if (action === 'create') {
      const cell = values['cell'] as string | undefined;
      if (cell === undefined) throw new UsageError('ns create needs --cell CELL');
      printResult(format, await call(endpoints, 'POST', '/v1/control/namespaces', { prefix, cell }), `namespace ${String(prefix)} on ${cell}`);
    } else if (action === 'show') {
      const n = (await call(endpoints, 'GET', path)) as { prefix: string; cell: string; epoch: number; state: string; endpoints: string[]; move?: MoveJson };
      if (format === 'json') printJson(n);
      else console.log(`${n.prefix}, ${n.cell}, epoch ${n.epoch}, ${n.state}, ${n.endpoints.join(',')}${n.move === undefined ? '' : `; ${moveLine(n.move)}`}`);
    } else if (action === 'move') {
      const to = values['to'] as string | undefined;
      if (to === undefined) throw new UsageError('ns move needs --to CELL');
      const started = (await call(endpoints, 'POST', '/v1/control/moves', { prefix, to })) as { move: MoveJson };
      let move = started.move;
      if (values['wait'] === true) {
        const deadline = Date.now() + moveWaitMaxMs;
        while ((move.phase !== 'released' && move.phase !== 'aborted') || move.cleaned === false) {
          if (Date.now() > deadline) throw new UsageError(`the move is still ${move.phase} after ${moveWaitMaxMs / 1000} s: follow it with ns show`);
          await new Promise((resolve) => setTimeout(resolve, movePollMs));
          move = ((await call(endpoints, 'GET', path)) as { move: MoveJson }).move;
        }
      }
      if (format === 'json') printJson({ move });
      else console.log(moveLine(move));
      if (move.phase === 'aborted') return exitCodes.failed;
    } else if (action === 'move-abort') {
      const answer = (await call(endpoints, 'POST', '/v1/control/moves/abort', { prefix })) as { move: MoveJson };
      if (format === 'json') printJson(answer);
      else console.log(moveLine(answer.move));
    } else if (action === 'delete') {
      printResult(format, await call(endpoints, 'DELETE', path), `namespace ${String(prefix)} deleted`);
    } else {
      throw new UsageError(`unknown ns action ${String(action)}`);
    }
    return exitCodes.ok;
  });

interface MoveJson {
  prefix: string; from: string; to: string; phase: string; cleaned?: boolean;
  copyRevision?: number; fenceRevision?: number; windowMs?: number; error?: string; blocked?: string;
}

function moveLine(move: MoveJson): string {
  const details = [
    move.fenceRevision === undefined ? '' : `fence revision ${move.fenceRevision} (watchers resume on ${move.to} from ${move.fenceRevision + 1})`,
    move.windowMs === undefined ? '' : `writes paused ${move.windowMs} ms`,
    move.error === undefined ? '' : move.error,
    move.blocked === undefined ? '' : `waiting before the fence: ${move.blocked}`,
  ].filter((d) => d !== '');
  return `move ${move.prefix} ${move.from} -> ${move.to}: ${move.phase}${details.length === 0 ? '' : `, ${details.join(', ')}`}`;
}

function printResult(format: string, answer: unknown, what: string): void {
  if (format === 'json') return printJson(answer);
  const { epoch, pending } = answer as { epoch: number; pending?: string[] };
  const waiting = pending !== undefined && pending.length > 0 ? `; not yet pushed to ${pending.join(', ')} (retried by the control plane)` : '';
  console.log(`${what} (map epoch ${epoch})${waiting}`);
}

/**
 * One request to the first endpoint that answers; an error answer becomes its typed error. Over
 * https:// with --cacert/--cert/--key (a TLS control plane or router: `baton dev --cells N --secure`).
 */
export async function call(endpoints: string[] | undefined, method: HttpRequest['method'], path: string, body?: unknown): Promise<unknown> {
  const seeds = endpoints ?? ['http://127.0.0.1:7000'];
  const tls = parsedClientTls();
  const secure = tls === undefined ? null : httpsTransport(tls);
  try {
    let lastError: unknown = null;
    for (const endpoint of seeds) {
      const transport = secure !== null && endpoint.startsWith('https:') ? secure.transport : fetchTransport;
      let answer: HttpAnswer;
      try {
        answer = await transport({
          method, url: `${endpoint}${path}`, timeoutMs: 15_000,
          headers: body === undefined ? {} : { 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
      } catch (error) {
        lastError = error;
        continue;
      }
      const json = JSON.parse(answer.text) as { error?: unknown };
      if (answer.status < 200 || answer.status >= 300) throw errorFromWire(json.error);
      return json;
    }
    throw errorFromWire({ code: 'unavailable', message: `no endpoint answered (${(lastError as Error)?.message ?? ''})` });
  } finally {
    secure?.close();
  }
}
