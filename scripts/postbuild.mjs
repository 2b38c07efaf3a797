// After `tsc`: the `baton` CLI becomes one bundle, and the `baton` bin must be directly executable
// (npx baton, npm link, a global install from the checkout run it through its shebang), and tsc
// writes every file 644. Plain node, so the build needs no shell tool beyond what npm already runs.
import { chmodSync, cpSync, readFileSync } from 'node:fs';
import { build } from 'esbuild';

const bin = new URL('../dist/src/cli/main.js', import.meta.url);
const text = readFileSync(bin, 'utf8');
if (!text.startsWith('#!/usr/bin/env node\n')) {
  console.error('postbuild: dist/src/cli/main.js lost its "#!/usr/bin/env node" line (src/cli/main.ts must start with it)');
  process.exit(1);
}

// Why a bundle: Node 20's ESM loader resolves, reads and links each of the ~320 modules a member
// loads one by one, which was 60% of a member's main-thread CPU before it is ready (~0.9 s of CPU
// per member). One file (with chunks for the lazy imports) is ready after ~0.6 s of CPU. The bundle replaces dist/src/cli/main.js in place, with the worker and child
// scripts the code starts by path (`new URL('./sync-worker.js', import.meta.url)`, ...) beside it
// under the same names, and at the same depth below dist/ as every other module, so paths
// relative to the package (../../ui/, ../../../package.json) mean the same. Dependencies stay in
// node_modules (lmdb's native addon, prom-client, ...). Tests import tsc's modules, not the bundle.
await build({
  entryPoints: {
    main: 'dist/src/cli/main.js',
    'sync-worker': 'dist/src/wal/sync-worker.js',
    'snapshot-thread-entry': 'dist/src/snap/snapshot-thread-entry.js',
    'verify-store-child': 'dist/src/storage/verify-store-child.js',
    'session-worker': 'dist/src/client/session-worker.js',
  },
  outdir: 'dist/src/cli',
  allowOverwrite: true,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  chunkNames: 'chunk-[hash]',
  logLevel: 'warning',
});
chmodSync(bin, 0o755);

// The web console's static files (docs/console.md) beside its compiled scripts (ui/tsconfig.json).
cpSync(new URL('../ui/static/', import.meta.url), new URL('../dist/ui/', import.meta.url), { recursive: true });
