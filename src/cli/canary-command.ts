// `baton canary`: runs the synthetic clients of src/canary against a cell for --duration-s and
// exits 0 if every probe held (no failure, no violation, no leader loss, no stuck apply), 1 with
// the failures otherwise. One JSON line per event on stdout, the summary last.
import { Canary } from '../canary/canary.js';
import { exitCodes, integerFlag, parseCommand, parsedClientTls, runWithClient, UsageError } from './client-command.js';
import { defaultEndpoints } from '../client/index.js';

const canaryHelp = `usage: baton canary [--duration-s N] [--interval-ms N] [--metrics-port P] [--resource-url URL]
  Every --interval-ms (default 1000) each probe runs once: lock (acquire, write through a fencing
  guard, release), election (campaign, observe, resign), lease (renew; let one lapse on purpose),
  watch (resume from the last revision after a forced disconnect: no gap, no repeat) and
  stale_owner (an expired holder's token must be rejected by the guard and by /v1/fencing/check).
  A monitor polls every member's status every 250 ms: a leader lost or an apply stuck for 2 s is
  reported. --metrics-port serves the SLIs on /metrics (baton_canary_*). --resource-url: write
  through a real fenced resource (POST {resource, token} -> {accepted}) instead of an in-process
  guard. Exits after --duration-s (default 60): 0 if everything held, 1 otherwise.
  A TLS cell: https:// endpoints with --cacert (and --cert/--key where the cell requires a client
  certificate); probes and monitor both use them. To run it inside the cell instead, start the
  members with BATON_CANARY=true (the server's canary flag): the leader runs it.`;

export const canaryCommand = (args: readonly string[]): Promise<number> =>
  runWithClient(canaryHelp, args, async () => {
    const { values, positionals, endpoints } = parseCommand(args, {
      'duration-s': { type: 'string' },
      'interval-ms': { type: 'string' },
      'metrics-port': { type: 'string' },
      'resource-url': { type: 'string' },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected ${positionals[0]}`);
    const durationS = integerFlag(values['duration-s'], 'duration-s') ?? 60;
    const intervalMs = integerFlag(values['interval-ms'], 'interval-ms') ?? 1000;
    if (durationS < 1 || intervalMs < 100) throw new UsageError('--duration-s is at least 1 and --interval-ms at least 100');
    const metricsPort = integerFlag(values['metrics-port'], 'metrics-port');
    const tls = parsedClientTls();
    const canary = new Canary({
      endpoints: endpoints ?? [...defaultEndpoints],
      durationS,
      intervalMs,
      ...(metricsPort === undefined ? {} : { metricsPort }),
      ...(values['resource-url'] === undefined ? {} : { resourceUrl: values['resource-url'] }),
      // https:// endpoints: the probes' client and the monitor trust --cacert and present --cert/--key.
      ...(tls === undefined ? {} : { tls }),
      log: (line) => console.log(JSON.stringify({ t: new Date().toISOString(), ...line })),
    });
    const summary = await canary.run();
    return summary.passed ? exitCodes.ok : 1;
  });
