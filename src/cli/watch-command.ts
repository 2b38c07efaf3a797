// `baton watch`: prints events as they commit until Ctrl-C or --count events. It rides the
// client's resumable watch, so a node that stops or a dropped connection is bridged without a
// gap or a duplicate; only `compacted` ends it (exit 1, with the compaction revision).
import {
  exitCodes,
  integerFlag,
  makeClient,
  parseCommand,
  printJson,
  requirePositionals,
  runWithClient,
  UsageError,
} from './client-command.js';
import type { WatchEvent } from '../client/index.js';

const watchHelp = `usage: baton watch KEY [--prefix] [--rev R] [--prev-kv] [--filter put|delete]
                   [--count N]
  Prints every change of KEY (or of keys under a prefix) from revision R (default: from now).
  Simple output is etcdctl-like (PUT|DELETE, key, value lines); -w json prints one batch per line
  {"revision", "events"}. Ends after N events with --count, or on Ctrl-C (exit 0).`;

export const watchCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(watchHelp, args, async () => {
    const { values, positionals, format, endpoints, discover } = parseCommand(args, {
      prefix: { type: 'boolean' },
      rev: { type: 'string' },
      'prev-kv': { type: 'boolean' },
      filter: { type: 'string' },
      count: { type: 'string' },
    });
    requirePositionals(positionals, 1, 1, 'one KEY');
    const filter = values.filter;
    if (filter !== undefined && filter !== 'put' && filter !== 'delete') {
      throw new UsageError('--filter must be put or delete');
    }
    const startRevision = integerFlag(values.rev, 'rev');
    const countMax = integerFlag(values.count, 'count') ?? Number.POSITIVE_INFINITY;
    const client = makeClient(endpoints, discover);
    const stop = new AbortController();
    const onSignal = (): void => stop.abort();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    let seen = 0;
    try {
      const watch = client.watch(positionals[0] as string, {
        ...(values.prefix === true ? { prefix: true } : {}),
        ...(startRevision !== undefined ? { startRevision } : {}),
        ...(values['prev-kv'] === true ? { prevKv: true } : {}),
        ...(filter !== undefined ? { filter } : {}),
        signal: stop.signal,
      });
      for await (const batch of watch) {
        const events = batch.events.slice(0, countMax - seen);
        seen += events.length;
        if (format === 'json') printJson({ revision: batch.revision, events });
        else for (const event of events) console.log(describeEvent(event, format === 'table'));
        if (seen >= countMax) break;
      }
      return exitCodes.ok;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      await client.close();
    }
  });

function describeEvent(event: WatchEvent, tabbed: boolean): string {
  const value = event.type === 'put' ? [event.kv.value] : [];
  const parts = [event.type.toUpperCase(), event.kv.key, ...value];
  return tabbed ? `${parts.join('\t')}\t${event.kv.modRevision}` : parts.join('\n');
}
