// Runs every transcript in test/unit/raft/scripts (see transcript.ts for the format): each block's
// output must be what the core prints now. BATON_REWRITE=1 writes the current output back into the
// scripts instead; review the diff as a change of specification before committing it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runTranscript, type TranscriptResult } from './transcript.js';

const scriptsPath = join('test', 'unit', 'raft', 'scripts');

/** The checkout this test runs from (compiled tests live under dist/, or a private build dir). */
function scriptsDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, scriptsPath))) {
    const parent = dirname(dir);
    if (parent === dir) return join(process.cwd(), scriptsPath);
    dir = parent;
  }
  return join(dir, scriptsPath);
}

const dir = scriptsDir();
const rewrite = process.env['BATON_REWRITE'] === '1';

function describeMismatches(file: string, mismatches: TranscriptResult['mismatches']): string {
  const parts = mismatches.map(({ command, line, expected, actual }) => {
    const diff: string[] = [];
    const count = Math.max(expected.length, actual.length);
    for (let i = 0; i < count; i++) {
      const want = expected[i];
      const got = actual[i];
      if (want === got) diff.push(`  ${want}`);
      else {
        if (want !== undefined) diff.push(`- ${want}`);
        if (got !== undefined) diff.push(`+ ${got}`);
      }
    }
    return `${file}:${line}: ${command}\n${diff.join('\n')}`;
  });
  return `transcript differs (- expected, + actual; BATON_REWRITE=1 regenerates):\n${parts.join('\n\n')}`;
}

const files = readdirSync(dir).filter((name) => name.endsWith('.txt')).sort();

test('the transcript scripts exist', () => {
  assert.ok(files.length > 0, `no scripts in ${dir}`);
});

for (const file of files) {
  test(`transcript ${file}`, () => {
    const path = join(dir, file);
    const text = readFileSync(path, 'utf8');
    const result = runTranscript(text);
    if (rewrite) {
      if (result.text !== text) writeFileSync(path, result.text);
      return;
    }
    assert.ok(result.mismatches.length === 0, describeMismatches(file, result.mismatches));
    assert.equal(result.text, text, 'the script is in canonical form (run with BATON_REWRITE=1)');
  });
}
