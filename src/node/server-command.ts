// `baton server`: run one node until SIGINT/SIGTERM. Exit codes: 0 clean stop, 1 fatal I/O error
// at run time (or a stop that hung past stopBoundMs), 2 bad configuration or damaged data found at
// startup. SIGTERM/SIGINT stop gracefully: a leader hands leadership to a caught-up voter first,
// watch streams end with `unavailable` and their last revision (clients resume elsewhere), and
// requests in flight get gracefulStopMs to be answered.
import { CorruptFileError } from '../base/errors.js';
import { stopBoundMs } from '../base/limits.js';
import { WrongKeyError } from '../keys/index.js';
import { ConfigError, describeNodeConfig, parseNodeConfig, type NodeConfig } from './config.js';
import { installFaultHooks, syncedCopyHook } from './testing/fault-hooks.js';
import { startNode, type NodeLogger } from './node.js';
import { notifyServiceManager } from './service-notify.js';
import { createNodeLogger } from './node-log.js';
import { listenHost, takenPortProblem, type PlannedListener } from './port-check.js';

const usage =
  'usage: baton server --name NAME --data-dir DIR --listen-client URL --listen-peer URL\n' +
  '                    --initial-cluster n1=URL,n2=URL,... [--initial-cluster-clients n1=URL,...]\n' +
  '                    [--initial-cluster-state new|existing] (existing: join a running cell, docs/api/members.md)\n' +
  '                    [--cell ID] [--tick-ms N] [--election-ticks N] [--initial-election-tick-advance true|false] [--checkpoint-ms N] [--log-catchup-entries N]\n' +
  '                    [--request-timeout-ms N] [--value-bytes-max N] [--log-level L] [--log-format text|json] [--config FILE]\n' +
  '                    [--listen-grpc URL] [--initial-cluster-grpc n1=URL,...] (etcd v3 gRPC, docs/etcd-compat.md)\n' +
  '                    [--corrupt-check-ms N] (the leader compares members\' HashKV every N ms, raising CORRUPT; 0 = off)\n' +
  '                    [--auto-compaction-mode periodic|revision] [--auto-compaction-retention 1h|30m|90s|HOURS|N]\n' +
  '                    (default: keep the last 100,000 revisions; a retention alone is periodic, as in etcd; 0 = off)\n' +
  '                    [--cert-file F --key-file F [--trusted-ca-file F --client-cert-auth]] (client TLS)\n' +
  '                    [--peer-cert-file F --peer-key-file F --peer-trusted-ca-file F] (peer mTLS; docs/security.md)\n' +
  '                    [--client-crl-file F] [--peer-crl-file F] (revocation lists; docs/security.md)\n' +
  '                    [--initial-cluster-token T]\n' +
  '                    [--canary] (the leader runs the canary\'s probes against this cell, SLIs on its /metrics; docs/operations.md)\n' +
  'Every flag also reads from BATON_<FLAG> (e.g. BATON_DATA_DIR) and from the JSON --config file.\n' +
  '--print-config prints the settings given (and where from) and the effective configuration, then exits.\n';

export async function runServer(argv: readonly string[]): Promise<number> {
  if (argv.includes('--help')) {
    process.stdout.write(usage);
    return 0;
  }
  let config;
  try {
    if (argv.includes('--print-config')) {
      process.stdout.write(`${JSON.stringify(describeNodeConfig(argv, process.env), null, 2)}\n`);
      return 0;
    }
    config = parseNodeConfig(argv, process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`baton server: ${error.message}\n\n${usage}`);
      return 2;
    }
    throw error;
  }
  const portProblem = await takenPortProblem(plannedListeners(config));
  if (portProblem !== null) {
    process.stderr.write(`baton server: cannot start: ${portProblem}\n`);
    return 2;
  }
  const log: NodeLogger = createNodeLogger({ format: config.logFormat, level: config.logLevel, cell: config.cellId, member: config.name });
  installFaultHooks(process.env, log); // off unless BATON_FAULT_INJECTION=1 (test/faults)
  let finish: (code: number) => void = () => {};
  const done = new Promise<number>((resolve) => (finish = resolve));
  let node;
  try {
    node = await startNode(config, log, (error) => {
      log.error(`stopping after a fatal error: ${error.message}`);
      finish(1);
    }, () => {
      log.warn('removed from the cell: stopping');
      finish(0);
    }, { onCheckpoint: syncedCopyHook(process.env, log) });
  } catch (error) {
    log.error(error instanceof CorruptFileError || error instanceof WrongKeyError ? `refusing to start: ${error.message}` : `cannot start: ${(error as Error).message}`);
    // The parts started before the failure (WAL and snapshot threads, peer listener, timers) would
    // keep the process alive: a node that could not start exits now.
    process.exit(2);
  }
  // SIGTERM/SIGINT: a graceful stop (leadership handed away, requests in flight answered).
  let graceful = false;
  const stop = (): void => {
    graceful = true;
    finish(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  // Under systemd (Type=notify): READY=1 once the node serves, STOPPING=1 when it stops.
  const notifier = notifyServiceManager(process.env, node.service, config.name, log);
  const code = await done;
  notifier.cancel();
  notifier.stopping();
  setTimeout(() => {
    log.error(`still stopping after ${stopBoundMs} ms: exiting anyway`);
    process.exit(1);
  }, stopBoundMs).unref();
  await node.stop({ graceful }).catch((error: Error) => log.error(`while stopping: ${error.message}`));
  log.info('stopped');
  return code;
}

function plannedListeners(config: NodeConfig): PlannedListener[] {
  const urls = [['--listen-client', config.listenClient], ['--listen-peer', config.listenPeer], ['--listen-grpc', config.listenGrpc]] as const;
  return urls.flatMap(([flag, url]) => url === null ? [] : [{ what: `${flag} ${url.protocol}//${url.host}`, host: listenHost(url), port: Number(url.port) }]);
}
