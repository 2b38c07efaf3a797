// The deterministic core (base, raft, mvcc, lease, watch, apply, lock, election) must not touch the world:
// no node:* modules, no wall clock, no Math.random, no timers, no process. This test reads the
// sources and fails on any forbidden import or call, and on imports that point the wrong way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const coreFolders = ['base', 'raft', 'mvcc', 'lease', 'watch', 'apply', 'lock', 'election'];
// Which src folders each folder may import from (besides itself).
const allowedImports: Record<string, readonly string[]> = {
  base: [],
  raft: ['base'],
  mvcc: ['base', 'raft'], // committed Entry shapes come from the Raft core's types
  lease: ['base'],
  watch: ['base', 'mvcc'],
  apply: ['base', 'mvcc', 'lease', 'watch', 'raft'],
  // api/lock-types.ts is the interface locks implement (types and key layout, no I/O).
  lock: ['base', 'mvcc', 'api'],
  election: ['base', 'mvcc', 'api', 'lock'],
};
const forbidden: readonly [RegExp, string][] = [
  [/from\s+['"]node:/, 'imports a node: module'],
  [/from\s+['"](fs|net|os|child_process|timers|http|worker_threads)['"]/, 'imports an I/O module'],
  [/\bDate\.now\s*\(/, 'reads the wall clock'],
  [/\bnew Date\s*\(/, 'reads the wall clock'],
  [/\bMath\.random\s*\(/, 'uses unseeded randomness'],
  [/\b(setTimeout|setInterval|setImmediate|queueMicrotask)\s*\(/, 'uses a timer'],
  [/\bprocess\./, 'touches the process'],
  [/\bperformance\.now\s*\(/, 'reads a clock'],
];

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

test('the deterministic core imports no I/O and no clock', () => {
  const problems: string[] = [];
  for (const folder of coreFolders) {
    for (const file of sourceFiles(join(root, 'src', folder))) {
      const text = readFileSync(file, 'utf8');
      for (const [pattern, what] of forbidden) {
        if (pattern.test(text)) problems.push(`${file} ${what}`);
      }
    }
  }
  assert.deepEqual(problems, []);
});

test('core imports point one way', () => {
  const problems: string[] = [];
  for (const folder of coreFolders) {
    for (const file of sourceFiles(join(root, 'src', folder))) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/from\s+['"]\.\.\/([a-z-]+)\//g)) {
        const target = match[1] as string;
        if (!allowedImports[folder]?.includes(target)) {
          problems.push(`${file} imports src/${target}`);
        }
      }
    }
  }
  assert.deepEqual(problems, []);
});
