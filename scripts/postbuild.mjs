// After `tsc`: the `baton` bin must be directly executable (npx baton, npm link, a global install
// from the checkout run it through its shebang), and tsc writes every file 644. Plain node, so the
// build needs no shell tool beyond what npm already runs.
import { chmodSync, cpSync, readFileSync } from 'node:fs';

const bin = new URL('../dist/src/cli/main.js', import.meta.url);
const text = readFileSync(bin, 'utf8');
if (!text.startsWith('#!/usr/bin/env node\n')) {
  console.error('postbuild: dist/src/cli/main.js lost its "#!/usr/bin/env node" line (src/cli/main.ts must start with it)');
  process.exit(1);
}
chmodSync(bin, 0o755);

// The web console's static files (docs/console.md) beside its compiled scripts (ui/tsconfig.json).
cpSync(new URL('../ui/static/', import.meta.url), new URL('../dist/ui/', import.meta.url), { recursive: true });
