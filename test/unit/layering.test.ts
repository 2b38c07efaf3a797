// The architecture as a test. Every folder of src/ is a unit with the units it may import; the
// deterministic core (base, raft, mvcc, lease, watch, lock) must not touch the world: no node:*
// modules, no wall clock, no Math.random, no timers of its own, no process. This test reads the
// sources and fails on a forbidden call, on an import the graph does not allow, on a folder the
// graph does not know, and on any cycle between folders.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { join, dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const src = join(root, 'src');

// A unit is a top-level folder, except the sub-folders named here: they are edges inside a
// concept's folder (the lease forwarders do network I/O; the process-cell harness spawns nodes).
const subUnits = ['lease/forward', 'node/testing'];

// Which units each unit may import from (besides itself). Read top to bottom: the core first,
// then the node's parts, then the composition root and the tools around it.
const allowedImports: Record<string, readonly string[]> = {
  base: [],
  raft: ['base'],
  mvcc: ['base', 'raft'], // committed Entry shapes come from the Raft core's types
  watch: ['base', 'mvcc'],
  // Authorization's pure core: policies and decisions over the commands' shapes; the
  // services ask it before they read.
  auth: ['base', 'mvcc'],
  lease: ['auth', 'base', 'mvcc', 'raft'],
  lock: ['auth', 'base', 'mvcc'],
  fencing: ['base'],
  metrics: ['raft'],
  wal: ['base', 'raft'],
  storage: ['base', 'mvcc'],
  // Encryption at rest: key-encryption keys, wrapped data keys and their files (docs/design/encryption.md).
  keys: ['base', 'mvcc'],
  transport: ['base', 'raft'],
  snap: ['base', 'keys', 'mvcc', 'raft', 'storage', 'transport'],
  driver: ['base', 'mvcc', 'raft', 'snap', 'transport', 'wal'],
  // The audit log: which applied entries are audited, and the file they go to (an edge: I/O).
  audit: ['base', 'mvcc', 'raft'],
  'lease/forward': ['base', 'lease', 'mvcc', 'raft', 'transport'],
  membership: ['base', 'mvcc', 'raft', 'transport'],
  // TLS material, certificates and identities: an edge that the node and the CLI use.
  security: ['base', 'raft', 'transport'],
  kv: ['api', 'auth', 'base', 'membership', 'metrics', 'mvcc', 'raft'],
  // The node hands it the store's revisions, the driver's role and the KV service's compact.
  compactor: ['base'],
  // The API edges are written against the services' contracts (lease/api.ts, lock/api.ts, ...).
  // The web console's files (dist/ui) and the answer to a GET of one, for the node and the router.
  console: ['base'],
  api: ['auth', 'base', 'console', 'lease', 'lock', 'membership', 'mvcc', 'watch'],
  // The control plane's service and routes (the cell map in a cell, pushed to the data cells).
  control: ['api', 'base'],
  // The router: forwards the HTTP API by namespace, caching the control plane's cell map.
  router: ['base', 'console', 'control', 'metrics'],
  // The router's etcd gRPC relay: the facade's HTTP/2 server, proto definitions and key mapping
  // (src/api/grpc) over the router's routing. A unit of its own so src/router stays thin (it
  // never imports src/api); composed by the CLI (`baton router --listen-grpc`) and `baton dev`.
  'router-grpc': ['api', 'base', 'router'],
  // The node runs the canary on its leader (--canary): canary depends on client, never on node.
  node: ['node/testing', 'api', 'canary', 'console', 'control', 'router', 'router-grpc', 'audit', 'auth', 'base', 'compactor', 'security', 'driver', 'keys', 'kv', 'lease', 'lease/forward', 'lock', 'membership', 'metrics', 'mvcc', 'raft', 'snap',
    'storage', 'transport', 'wal', 'watch'],
  'node/testing': ['base', 'security', 'wal'],
  // The client's JSON shapes derive from the API's (types only: the client ships without the server).
  client: ['api', 'base', 'lock'],
  check: ['base'],
  // The cells world (src/sim/cells) changes its cell map with the control plane's pure functions.
  sim: ['auth', 'base', 'control', 'driver', 'lease', 'lock', 'mvcc', 'raft', 'watch'],
  // The benches start real cells (ProcessCell) to measure them; they never import the node itself.
  bench: ['api', 'node/testing'],
  // Synthetic clients over the client library, a fencing guard, and their own /metrics.
  canary: ['client', 'fencing', 'metrics'],
  cli: ['base', 'bench', 'canary', 'client', 'keys', 'mvcc', 'node', 'raft', 'router', 'router-grpc', 'security', 'sim', 'snap'],
  fuzz: ['api', 'base', 'node/testing'],
};
const coreUnits = ['base', 'raft', 'mvcc', 'watch', 'lease', 'lock', 'auth'];

const forbidden: readonly [RegExp, string][] = [
  [/from\s+['"]node:/, 'imports a node: module'],
  [/from\s+['"](fs|net|os|child_process|timers|http|worker_threads)['"]/, 'imports an I/O module'],
  [/\bDate\.now\s*\(/, 'reads the wall clock'],
  [/\bnew Date\s*\(/, 'reads the wall clock'],
  [/\bMath\.random\s*\(/, 'uses unseeded randomness'],
  // Injected timers (this.timers.setTimeout) are the point; the global ones are not.
  [/(?<![.\w])(setTimeout|setInterval|setImmediate|queueMicrotask)\s*\(/, 'uses a timer'],
  [/\bprocess\./, 'touches the process'],
  [/\bperformance\.now\s*\(/, 'reads a clock'],
  [/\bfetch\s*\(/, 'does network I/O'],
];

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

function unitOf(file: string): string {
  const path = relative(src, file).split('/');
  const sub = `${path[0]}/${path[1]}`;
  return subUnits.includes(sub) && path.length > 2 ? sub : (path[0] as string);
}

/** Code without comments, so a comment naming Date.now() is no violation. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1] as string);
  return specs.map((spec) => resolve(dirname(file), spec)).filter((target) => target.startsWith(src));
}

const files = sourceFiles(src);
assert.ok(files.length > 200, `the sources are under ${src}`);

/** unit -> units it imports, with one example file per edge. */
function unitGraph(): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of files) {
    const from = unitOf(file);
    for (const target of importsOf(file)) {
      const to = unitOf(target);
      if (to === from) continue;
      if (!graph.has(from)) graph.set(from, new Map());
      graph.get(from)?.set(to, relative(root, file));
    }
  }
  return graph;
}

test('the deterministic core imports no I/O and no clock', () => {
  const problems: string[] = [];
  for (const file of files) {
    if (!coreUnits.includes(unitOf(file))) continue;
    const text = code(readFileSync(file, 'utf8'));
    for (const [pattern, what] of forbidden) {
      if (pattern.test(text)) problems.push(`${relative(root, file)} ${what}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('every folder of src/ has a place in the graph', () => {
  const units = new Set(files.map(unitOf));
  assert.deepEqual([...units].filter((unit) => !(unit in allowedImports)).sort(), []);
});

test('imports point the way the graph allows', () => {
  const problems: string[] = [];
  for (const [from, targets] of unitGraph()) {
    for (const [to, example] of targets) {
      if (!allowedImports[from]?.includes(to)) problems.push(`${example} (src/${from}) imports src/${to}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('nothing imports the composition root', () => {
  const importers = [...unitGraph()].filter(([from, targets]) => from !== 'cli' && targets.has('node')).map(([from]) => from);
  assert.deepEqual(importers, []);
});

test('no cycle between folders, neither in the allowed graph nor in the code', () => {
  const findCycle = (edges: (unit: string) => Iterable<string>, units: Iterable<string>): string[] | null => {
    const state = new Map<string, 'open' | 'done'>();
    const path: string[] = [];
    const visit = (unit: string): string[] | null => {
      if (state.get(unit) === 'done') return null;
      if (state.get(unit) === 'open') return [...path.slice(path.indexOf(unit)), unit];
      state.set(unit, 'open');
      path.push(unit);
      for (const next of edges(unit)) {
        const cycle = visit(next);
        if (cycle !== null) return cycle;
      }
      path.pop();
      state.set(unit, 'done');
      return null;
    };
    for (const unit of units) {
      const cycle = visit(unit);
      if (cycle !== null) return cycle;
    }
    return null;
  };
  assert.equal(findCycle((unit) => allowedImports[unit] ?? [], Object.keys(allowedImports)), null);
  const graph = unitGraph();
  assert.equal(findCycle((unit) => graph.get(unit)?.keys() ?? [], graph.keys()), null);
});

test('the client takes only types from the server side (it runs without it)', () => {
  const problems: string[] = [];
  for (const file of files) {
    if (unitOf(file) !== 'client') continue;
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/^import\s+(type\s+)?[^;]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/gm)) {
      const target = unitOf(resolve(dirname(file), match[2] as string));
      if (target !== 'client' && target !== 'base' && match[1] === undefined) problems.push(`${relative(root, file)} imports src/${target} at run time`);
    }
  }
  assert.deepEqual(problems, []);
});

test('the README\'s layout table is the graph: every unit, with the units it may import', () => {
  const readme = join(root, 'README.md');
  assert.ok(existsSync(readme), `the README is at ${readme}`);
  const documented: Record<string, string[]> = {};
  for (const match of readFileSync(readme, 'utf8').matchAll(/^\| `src\/([a-z/-]+)` \| [^|]+ \| ([^|]+) \|$/gm)) {
    const deps = (match[2] as string).trim();
    documented[match[1] as string] = deps === 'nothing' ? [] : deps.split(',').map((d) => d.trim()).sort();
  }
  const expected = Object.fromEntries(Object.entries(allowedImports).map(([unit, deps]) => [unit, [...deps].sort()]));
  assert.deepEqual(documented, expected);
});
