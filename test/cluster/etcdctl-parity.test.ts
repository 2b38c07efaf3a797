// One etcdctl 3.4 script run against a real 3-member etcd 3.4 and a 3-process Baton cell in the
// same test: every command group (kv, txn, watch with --rev and --prev-kv, lease, lock, elect,
// member list, endpoint status/health/hashkv, move-leader, alarm, defrag, compaction, snapshot
// save; auth: users, roles, grants, auth enable, calls as users, auth disable) must end the same
// way (exit code and output, with ids, revisions, hashes, sizes and times masked). Where Baton differs on purpose or has not caught up, the step says so
// (`differs`) and Baton's own outcome is checked instead: the list is the honest gap.
// Skipped when etcd or etcdctl is not installed (Debian: etcd-server, etcd-client).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { EtcdCell } from '../../src/bench/etcd-cell.js';
import { findEtcdctl } from './etcdctl-path.js';
import { freePorts, startTestCell, type TestCell } from './harness.js';

const run = promisify(execFile);
const etcdctl = findEtcdctl() ?? undefined;
const etcdBinary = spawnSync('etcd', ['--version']).status === 0;
const skip = etcdctl === undefined || !etcdBinary ? 'etcd or etcdctl not installed (Debian: apt-get install etcd-server etcd-client)' : false;
if (skip !== false) console.log(`# etcdctl-parity: SKIPPING: ${skip}`);

interface Outcome {
  readonly code: number;
  readonly out: string;
}

type Vars = Record<string, string>;

interface Step {
  readonly name: string;
  readonly args: (vars: Vars) => string[];
  readonly stdin?: string;
  /** Runs this long, then is stopped (watch, elect); its output so far is the outcome. */
  readonly forMs?: number;
  /** Started this long before `then` runs (a watch that must see later writes). */
  readonly alongside?: { readonly waitMs: number; readonly then: readonly string[][] };
  readonly capture?: (out: string, vars: Vars) => void;
  /** Further masking for this step's output. */
  readonly mask?: (out: string) => string;
  /** etcd itself fails this step (the script checks an error); every other step must succeed on etcd. */
  readonly fails?: true;
  /** Sent to the first member only (snapshot save refuses several endpoints). */
  readonly oneEndpoint?: true;
  /** A known difference: Baton's outcome must match this instead of etcd's. */
  readonly differs?: { readonly why: string; readonly baton: (outcome: Outcome) => boolean };
}

let dir: string;
let baton: TestCell;
let etcd: EtcdCell;
const endpoints: Record<'etcd' | 'baton', string> = { etcd: '', baton: '' };

before(async () => {
  if (skip !== false) return;
  dir = mkdtempSync(join(tmpdir(), 'baton-parity-'));
  const ports = await freePorts(6);
  etcd = new EtcdCell(join(dir, 'etcd'), [0, 1, 2].map((i) => ({ name: `e${i + 1}`, clientPort: ports[i] as number, peerPort: ports[i + 3] as number })));
  etcd.startAll();
  baton = await startTestCell({ grpc: true });
  await etcd.waitReady(60_000);
  endpoints.etcd = etcd.clientUrls().map((u) => u.host).join(',');
  endpoints.baton = baton.names.map((name) => baton.cell.grpcEndpoint(name)).join(',');
});

after(async () => {
  await baton?.close();
  await etcd?.stopAll();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

async function ctl(system: 'etcd' | 'baton', args: string[], stdin?: string, oneEndpoint = false): Promise<Outcome> {
  const list = oneEndpoint ? endpoints[system].split(',')[0] as string : endpoints[system];
  const child = run(etcdctl as string, [`--endpoints=${list}`, '--command-timeout=8s', ...args], {
    env: { ...process.env, ETCDCTL_API: '3' }, timeout: 20_000,
  });
  if (stdin !== undefined) child.child.stdin?.end(stdin);
  try {
    const { stdout, stderr } = await child;
    return { code: 0, out: `${stdout}${stderr}` };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, out: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

/** A long-running etcdctl (watch, elect), stopped after `forMs`, with `during` commands run meanwhile. */
function ctlFor(system: 'etcd' | 'baton', args: string[], forMs: number, during: readonly string[][], waitMs: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(etcdctl as string, [`--endpoints=${endpoints[system]}`, ...args], { env: { ...process.env, ETCDCTL_API: '3' } });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    setTimeout(async () => {
      for (const command of during) await ctl(system, command);
    }, waitMs);
    setTimeout(() => child.kill('SIGINT'), forMs);
    child.on('exit', () => resolve({ code: 0, out }));
  });
}

/** What differs between any two clusters: ids, revisions, hashes, sizes, times, addresses. */
function masked(out: string): string {
  return out
    .split('\n').filter((line) => !line.startsWith('{"level":')).join('\n') // clientv3's retry log lines
    .replace(/compacted revision \d+/g, 'compacted revision <n>')
    .replace(/\b[0-9a-f]{16}\b/g, '<hex>')
    .replace(/\b[0-9a-f]{10,15}\b/g, '<hex>')
    .replace(/127\.0\.0\.1:\d+/g, '<addr>')
    .replace(/"(revision|raft_term|raftTerm|raftIndex|raftAppliedIndex|cluster_id|member_id|create_revision|mod_revision|ID|leader|dbSize|dbSizeInUse|hash|compact_revision|hash_revision|lease)":"?\d+"?/g, '"$1":<n>')
    .replace(/\d+(\.\d+)? ?(ms|µs|s)\b/g, '<time>')
    .replace(/\d+(\.\d+)? ?(kB|MB|B)\b/g, '<size>')
    .replace(/\b\d{5,}\b/g, '<n>')
    .trim();
}

const steps: readonly Step[] = [
  { name: 'put', args: () => ['put', 'p/k1', 'v1'] },
  { name: 'put --prev-kv of a new key', args: () => ['put', 'p/k2', 'v2', '--prev-kv'] },
  { name: 'put --prev-kv of an existing key', args: () => ['put', 'p/k1', 'v1b', '--prev-kv'] },
  { name: 'put p/k3', args: () => ['put', 'p/k3', 'v3'] },
  { name: 'get', args: () => ['get', 'p/k1'] },
  { name: 'get --prefix', args: () => ['get', 'p/', '--prefix'] },
  { name: 'get --prefix --keys-only', args: () => ['get', 'p/', '--prefix', '--keys-only'] },
  { name: 'get a range [k1, k3)', args: () => ['get', 'p/k1', 'p/k3'] },
  { name: 'get --from-key', args: () => ['get', '--from-key', 'p/k2', '--keys-only'] },
  { name: 'get --prefix --limit 1 -w json', args: () => ['get', 'p/', '--prefix', '--limit', '1', '-w', 'json'] },
  // etcdctl 3.4 has no --count-only: the fields output carries the count.
  { name: 'get -w fields (count and more)', args: () => ['get', 'p/', '--prefix', '--limit', '2', '-w', 'fields'], mask: (o) => o.split('\n').filter((l) => /Count|More/.test(l)).join('\n') },
  { name: 'get sorted by key, descending', args: () => ['get', 'p/', '--prefix', '--sort-by=KEY', '--order=DESCEND', '--keys-only'] },
  { name: 'get a missing key', args: () => ['get', 'nothing'] },
  {
    name: 'txn (failure branch)',
    args: () => ['txn'],
    stdin: 'value("p/k1") = "nope"\n\nput p/t yes\n\nget p/k1\n\n',
  },
  {
    name: 'txn (success branch)',
    args: () => ['txn'],
    stdin: 'value("p/k1") = "v1b"\nversion("p/k2") = "1"\n\nput p/t yes\n\nget p/k1\n\n',
  },
  { name: 'txn --interactive', args: () => ['txn', '--interactive'], stdin: 'mod("p/k3") > "0"\n\ndel p/t\n\n\n' },
  { name: 'del', args: () => ['del', 'p/k2'] },
  { name: 'del --prefix --prev-kv', args: () => ['del', 'p/', '--prefix', '--prev-kv'] },
  { name: 'del of a missing key', args: () => ['del', 'nothing'] },
  {
    name: 'lease grant',
    args: () => ['lease', 'grant', '60'],
    capture: (out, vars) => (vars['lease'] = /lease ([0-9a-f]+) granted/.exec(out)?.[1] ?? ''),
  },
  { name: 'put --lease', args: (v) => ['put', 'l/k', 'v', `--lease=${v['lease']}`] },
  { name: 'lease timetolive --keys', args: (v) => ['lease', 'timetolive', v['lease'] as string, '--keys'], mask: (o) => o.replace(/remaining\(\d+s\)/, 'remaining(<s>)') },
  { name: 'lease list', args: () => ['lease', 'list'] },
  { name: 'lease keep-alive --once', args: (v) => ['lease', 'keep-alive', '--once', v['lease'] as string] },
  { name: 'lease revoke', args: (v) => ['lease', 'revoke', v['lease'] as string] },
  { name: 'the leased key is gone', args: () => ['get', 'l/k'] },
  { name: 'lease timetolive of a revoked lease', args: (v) => ['lease', 'timetolive', v['lease'] as string] },
  {
    name: 'put w (its revision)',
    args: () => ['put', 'w', 'a', '-w', 'json'],
    capture: (out, vars) => (vars['wrev'] = String(JSON.parse(out).header.revision)),
  },
  { name: 'put w again', args: () => ['put', 'w', 'b'] },
  { name: 'watch --rev --prev-kv (history, then a live event)', args: (v) => ['watch', 'w', `--rev=${v['wrev']}`, '--prev-kv'], forMs: 3000, alongside: { waitMs: 1500, then: [['put', 'w', 'c']] } },
  { name: 'watch --prefix sees puts and deletes', args: () => ['watch', 'x/', '--prefix'], forMs: 3000, alongside: { waitMs: 1500, then: [['put', 'x/1', 'one'], ['del', 'x/1']] } },
  {
    name: 'compaction at the revision of the first w',
    args: (v) => ['compaction', v['wrev'] as string],
  },
  { name: 'get below the compaction', args: () => ['get', 'w', '--rev=1'], fails: true },
  { name: 'watch from a compacted revision', args: () => ['watch', 'w', '--rev=1'], forMs: 2000 },
  { name: 'lock runs a command holding the lock', args: () => ['lock', 'job', 'echo', 'holding'] },
  { name: 'elect --listen with no leader', args: () => ['elect', '--listen', 'chief'], forMs: 1500 },
  // The campaign key ends in the session's lease id in hex: etcd's are 64-bit, Baton's count from 1.
  { name: 'elect with a proposal: leader until stopped', args: () => ['elect', 'chief2', 'proposal'], forMs: 2000, mask: (o) => o.replace(/chief2\/[0-9a-f]+/, 'chief2/<lease>') },
  { name: 'member list', args: () => ['member', 'list'], mask: (o) => o.split('\n').map((l) => l.split(',').length).join(',') },
  { name: 'endpoint health', args: () => ['endpoint', 'health'], mask: (o) => o.split('\n').map((l) => l.replace(/took = [^\s]+/, 'took')).sort().join('\n') },
  { name: 'endpoint status', args: () => ['endpoint', 'status', '-w', 'json'], mask: (o) => String((JSON.parse(o) as unknown[]).length) },
  {
    name: 'endpoint hashkv: every member agrees',
    args: () => ['endpoint', 'hashkv', '-w', 'json'],
    mask: (o) => String(new Set((JSON.parse(o) as { HashKV: { hash: number } }[]).map((e) => e.HashKV.hash)).size),
  },
  { name: 'alarm list', args: () => ['alarm', 'list'] },
  { name: 'defrag', args: () => ['defrag'], mask: (o) => o.split('\n').map((l) => l.replace(/\[[^\]]*\]/, '[<member>]')).join('\n') },
  {
    name: 'snapshot save (one endpoint)',
    oneEndpoint: true,
    args: () => ['snapshot', 'save', join(dir, `snap-${Math.random().toString(36).slice(2)}.db`)],
    mask: (o) => (/Snapshot saved at/.test(o) ? 'saved' : o),
  },
  {
    name: 'move-leader to a follower',
    args: (v) => ['move-leader', v['follower'] as string],
    mask: (o) => o.replace(/[0-9a-f]+ to [0-9a-f]+/, '<a> to <b>'),
  },
  // Auth: the whole flow of etcd's docs/op-guide/authentication, ending with auth disable.
  { name: 'user add root', args: () => ['user', 'add', 'root:rootpw'] },
  { name: 'role add root', args: () => ['role', 'add', 'root'] },
  { name: 'user grant-role root root', args: () => ['user', 'grant-role', 'root', 'root'] },
  { name: 'user add alice', args: () => ['user', 'add', 'alice:secret'] },
  { name: 'user add alice again', args: () => ['user', 'add', 'alice:again'], fails: true },
  { name: 'role add reader', args: () => ['role', 'add', 'reader'] },
  { name: 'role grant-permission reader read --prefix', args: () => ['role', 'grant-permission', 'reader', 'read', 'parity/', '--prefix'] },
  { name: 'role grant-permission reader write one key', args: () => ['role', 'grant-permission', 'reader', 'write', 'parity/w'] },
  { name: 'user grant-role alice reader', args: () => ['user', 'grant-role', 'alice', 'reader'] },
  { name: 'user grant-role alice no-such-role', args: () => ['user', 'grant-role', 'alice', 'nope'], fails: true },
  { name: 'user get alice', args: () => ['user', 'get', 'alice'] },
  { name: 'role get reader', args: () => ['role', 'get', 'reader'] },
  { name: 'role list', args: () => ['role', 'list'] },
  { name: 'user list', args: () => ['user', 'list'] },
  { name: 'auth enable', args: () => ['auth', 'enable'] },
  { name: 'alice reads her prefix', args: () => ['--user', 'alice:secret', 'get', 'parity/', '--prefix', '--keys-only'] },
  { name: 'alice writes her one key', args: () => ['--user', 'alice:secret', 'put', 'parity/w', 'v'] },
  { name: 'alice writes elsewhere in her prefix', args: () => ['--user', 'alice:secret', 'put', 'parity/x', 'v'], fails: true },
  { name: 'alice with a wrong password', args: () => ['--user', 'alice:wrong', 'get', 'parity/w'], fails: true },
  { name: 'anonymous user list while auth is on', args: () => ['user', 'list'], fails: true,
    differs: { why: 'etcd answers an anonymous call "user name is empty"; Baton "permission denied" (docs/etcd-compat.md)', baton: (o) => o.code !== 0 && /permission denied/.test(o.out) } },
  { name: 'role revoke-permission', args: () => ['--user', 'root:rootpw', 'role', 'revoke-permission', 'reader', 'parity/w'] },
  { name: 'user revoke-role', args: () => ['--user', 'root:rootpw', 'user', 'revoke-role', 'alice', 'reader'] },
  { name: 'auth disable', args: () => ['--user', 'root:rootpw', 'auth', 'disable'] },
  { name: 'user delete alice', args: () => ['user', 'delete', 'alice'] },
  { name: 'role delete reader', args: () => ['role', 'delete', 'reader'] },
];

test('etcdctl 3.4: the same script against etcd 3.4 and Baton ends the same way', { skip, timeout: 300_000 }, async (t) => {
  const vars: Record<'etcd' | 'baton', Vars> = { etcd: {}, baton: {} };
  const mismatches: string[] = [];
  for (const step of steps) {
    const outcomes: Record<string, Outcome> = {};
    for (const system of ['etcd', 'baton'] as const) {
      if (step.name.startsWith('move-leader')) vars[system]['follower'] = await followerId(system);
      const args = step.args(vars[system]);
      const outcome = step.forMs === undefined
        ? await ctl(system, args, step.stdin, step.oneEndpoint === true)
        : await ctlFor(system, args, step.forMs, step.alongside?.then ?? [], step.alongside?.waitMs ?? 0);
      step.capture?.(outcome.out, vars[system]);
      outcomes[system] = outcome;
    }
    const view = (o: Outcome): string => `exit ${o.code === 0 ? 0 : 'non-zero'}: ${masked(step.mask?.(o.out) ?? o.out)}`;
    // The script must really work against etcd: equal failures on both sides would prove nothing.
    if ((outcomes['etcd']?.code === 0) === (step.fails === true)) mismatches.push(`${step.name}: etcd itself: ${view(outcomes['etcd'] as Outcome)}`);
    const etcdView = view(outcomes['etcd'] as Outcome);
    const batonView = view(outcomes['baton'] as Outcome);
    if (step.differs !== undefined) {
      t.diagnostic(`${step.name}: differs (${step.differs.why}); etcd: ${etcdView.slice(0, 120)}`);
      if (!step.differs.baton(outcomes['baton'] as Outcome)) mismatches.push(`${step.name}: Baton's own expected outcome not met: ${batonView}`);
      continue;
    }
    if (etcdView !== batonView) mismatches.push(`${step.name}:\n  etcd:  ${etcdView}\n  baton: ${batonView}`);
  }
  assert.deepEqual(mismatches, []);
});

/** The hex id of a member that is not the leader, as etcdctl names members. */
async function followerId(system: 'etcd' | 'baton'): Promise<string> {
  // The ids are 64-bit: read as text, never as JSON numbers (they would round).
  const status = await ctl(system, ['endpoint', 'status', '-w', 'json']);
  const members = [...status.out.matchAll(/"member_id":(\d+).*?"leader":(\d+)/g)].map((m) => ({ id: m[1] as string, leader: m[2] as string }));
  const follower = members.find((m) => m.id !== m.leader);
  return BigInt(follower?.id ?? '0').toString(16);
}
