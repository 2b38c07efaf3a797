// The `baton` commands as data: what `baton --help` lists, what shell completion offers, and which
// flags go before the command (etcdctl's and kubectl's global flags). Dispatch stays in main.ts,
// which asserts at load that it and this table name the same commands.
// test/unit/cli/completion.test.ts checks every row's flags against the command's own --help.

export interface CommandRow {
  readonly name: string;
  readonly summary: string;
  /** The command's own flags, without the client commands' common ones. */
  readonly flags: readonly string[];
  /** First positional words that select an action (`baton lease grant`). */
  readonly actions?: readonly string[];
  /** True for commands that talk to a cell: they take the common flags (globalValueFlags, ...). */
  readonly client: boolean;
}

/** Flags every client command takes (client-command.ts); they may come before the command. */
export const globalValueFlags = ['--endpoints', '--cacert', '--cert', '--key', '--write-out', '-w'] as const;
export const globalBooleanFlags = ['--no-discover'] as const;
/** Flags whose value is a file name (completion offers files). */
export const fileFlags = ['--cacert', '--cert', '--key', '--config', '--data-dir', '--cert-file', '--key-file',
  '--trusted-ca-file', '--peer-cert-file', '--peer-key-file', '--peer-trusted-ca-file', '--client-crl-file', '--peer-crl-file',
  '--client-cert-file', '--client-key-file', '--upstream-ca-file'] as const;
export const writeOutValues = ['simple', 'json', 'table'] as const;

export const commandTable: readonly CommandRow[] = [
  { name: 'server', summary: 'run one node of a cell', client: false, flags: [] /* from node/config.ts: nodeFlags */ },
  { name: 'dev', summary: 'a local 3-node cell (npm start); --cells N: cells behind a router', client: false,
    flags: ['--data-dir', '--secure', '--client-ports', '--peer-ports', '--grpc-ports', '--cells', '--base-port'] },
  { name: 'router', summary: 'route the HTTP API and etcd gRPC to the cells owning each namespace', client: false,
    flags: ['--control', '--listen', '--listen-grpc', '--cert-file', '--key-file', '--trusted-ca-file', '--client-cert-auth', '--client-crl-file', '--client-cert-file', '--client-key-file', '--upstream-ca-file'] },
  { name: 'cells', summary: 'list and add the cells of the cell map', client: true, flags: ['--cell-endpoints'], actions: ['list', 'add'] },
  { name: 'ns', summary: 'create, list, show, delete and move namespaces', client: true, flags: ['--cell', '--to', '--wait'],
    actions: ['create', 'list', 'show', 'delete', 'move', 'move-abort'] },
  { name: 'tenant', summary: 'create, set, show, list and delete tenants and their quotas', client: true,
    flags: ['--prefix', '--max-keys', '--max-bytes', '--max-leases', '--max-txn-ops', '--reads-per-second', '--writes-per-second', '--max-concurrent-requests', '--max-watches', '--max-watch-bytes', '--events-per-second'],
    actions: ['create', 'set', 'show', 'list', 'delete'] },
  { name: 'sim', summary: 'simulator seed sweep', client: false,
    flags: ['--seeds', '--seed-start', '--seed', '--trace', '--catch-rate', '--profile', '--fault-phase-ms', '--driver',
      '--snapshots', '--state-machine', '--workload', '--bug', '--lease-bug', '--lock-bug', '--store-bug', '--watch-bug', '--older-copy', '--ledger-check', '--tenants',
      '--world', '--cells', '--cells-bug', '--watches', '--nested', '--no-feed', '--mover'] },
  { name: 'sim-demo', summary: 'a simulated cell narrated in this process', client: false, flags: [] },
  { name: 'bench', summary: 'closed-loop load against a running cell', client: false,
    flags: ['--endpoints', '--workload', '--clients', '--duration-s', '--warmup-s', '--repeats', '--system', '--json'] },
  { name: 'get', summary: 'read a key or a prefix', client: true,
    flags: ['--prefix', '--limit', '--rev', '--keys-only', '--count-only', '--serializable'] },
  { name: 'put', summary: 'write a key', client: true, flags: ['--if-version', '--if-revision', '--lease', '--request-id'] },
  { name: 'del', summary: 'delete a key or a prefix', client: true,
    flags: ['--prefix', '--if-version', '--if-revision', '--request-id', '--all-keys'] },
  { name: 'txn', summary: 'one transaction from JSON', client: true, flags: ['--request-id'] },
  { name: 'watch', summary: 'print the changes of a key or a prefix', client: true,
    flags: ['--prefix', '--rev', '--prev-kv', '--filter', '--count'] },
  { name: 'lease', summary: 'grant, renew, revoke and list leases', client: true, flags: ['--once', '--limit', '--after'],
    actions: ['grant', 'keepalive', 'revoke', 'timetolive', 'list'] },
  { name: 'member', summary: 'list, add, promote, remove and replace members', client: true,
    flags: ['--peer-url', '--client-url', '--name', '--wait-s'], actions: ['list', 'add', 'promote', 'remove', 'replace'] },
  { name: 'status', summary: 'the cell as one node sees it', client: true, flags: [] },
  { name: 'compact', summary: 'compact the history up to a revision', client: true, flags: [] },
  { name: 'snapshot', summary: 'save, check or restore a snapshot file', client: true, flags: ['--encryption-key-file', '--encryption-key-command'], actions: ['save', 'status', 'inspect', 'restore'] },
  { name: 'lock', summary: 'hold a lock, or run a command under it', client: true,
    flags: ['--ttl', '--wait', '--owner', '--kill-grace'] },
  { name: 'elect', summary: 'campaign in an election, or observe it', client: true, flags: ['--ttl', '--wait', '--count'] },
  { name: 'canary', summary: 'synthetic clients that check the cell keeps its promises', client: true,
    flags: ['--duration-s', '--interval-ms', '--metrics-port', '--resource-url'] },
  { name: 'audit', summary: "read a node's audit log (tail, grep)", client: false, flags: ['--lines', '--event', '--principal', '--result'],
    actions: ['tail', 'grep'] },
  { name: 'certs', summary: 'a CA, member and client certificates, revocation', client: false,
    flags: ['--dir', '--cn', '--cell', '--host', '--out'], actions: ['ca', 'member', 'client', 'revoke', 'crl'] },
  { name: 'keys', summary: 'encryption at rest: add, status and rotate keys, retire old data keys', client: false,
    flags: ['--data-dir', '--encryption-key-file', '--encryption-key-command', '--data-key'], actions: ['add', 'status', 'rotate', 'retire'] },
  { name: 'completion', summary: 'print a bash or zsh completion script', client: false, flags: [], actions: ['bash', 'zsh'] },
  { name: 'version', summary: 'print the version', client: false, flags: [] },
];

export function commandRow(name: string): CommandRow | undefined {
  return commandTable.find((row) => row.name === name);
}

export function usageText(): string {
  const width = Math.max(...commandTable.map((row) => row.name.length));
  const rows = commandTable.map((row) => `  ${row.name.padEnd(width)}  ${row.summary}`);
  return `usage: baton [global flags] <command> [options]   (baton <command> --help)\n\n`
    + `Commands:\n${rows.join('\n')}\n\n`
    + `Global flags (before or after the command, for the commands that talk to a cell):\n`
    + `  --endpoints URLS, --no-discover, --cacert FILE, --cert FILE, --key FILE, -w/--write-out FORMAT\n`
    + `  --version   the package version;   -h, --help   this help`;
}
