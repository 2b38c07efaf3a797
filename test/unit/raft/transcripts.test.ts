// Runs every transcript in test/unit/raft/scripts (see transcript.ts for the format): each block's
// output must be what the core prints now. BATON_REWRITE=1 writes the current output back into the
// scripts instead; review the diff as a change of specification before committing it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../project-root.js';
import { runTranscript, type TranscriptResult } from './transcript.js';

const scriptsPath = join('test', 'unit', 'raft', 'scripts');

const dir = join(projectRoot(import.meta.url, scriptsPath), scriptsPath);
const rewrite = process.env['BATON_REWRITE'] === '1';

/** A line diff (longest common subsequence): '  ' kept, '- ' expected only, '+ ' actual only. */
function diffLines(expected: readonly string[], actual: readonly string[]): string[] {
  const n = expected.length;
  const m = actual.length;
  // common[i][j]: length of the longest common subsequence of expected[i..] and actual[j..].
  const common = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      const row = common[i] as number[];
      row[j] = expected[i] === actual[j]
        ? (common[i + 1] as number[])[j + 1] as number + 1
        : Math.max((common[i + 1] as number[])[j] as number, row[j + 1] as number);
    }
  }
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && expected[i] === actual[j]) {
      out.push(`  ${expected[i++]}`);
      j++;
    } else if (j < m && (i === n || ((common[i] as number[])[j + 1] as number) >= ((common[i + 1] as number[])[j] as number))) {
      out.push(`+ ${actual[j++]}`);
    } else {
      out.push(`- ${expected[i++]}`);
    }
  }
  return out;
}

/** Only the changed lines and `context` lines around each change. */
function trimContext(diff: readonly string[], context = 3): string[] {
  const near = diff.map(() => false);
  diff.forEach((line, i) => {
    if (line.startsWith('  ')) return;
    for (let k = Math.max(0, i - context); k <= Math.min(diff.length - 1, i + context); k++) near[k] = true;
  });
  const out: string[] = [];
  diff.forEach((line, i) => {
    if (near[i]) out.push(line);
    else if (i > 0 && near[i - 1]) out.push('  ...');
  });
  return out;
}

function describeMismatches(file: string, mismatches: TranscriptResult['mismatches']): string {
  const parts = mismatches.map(({ command, line, expected, actual }) =>
    `${file}:${line}: ${command}\n${trimContext(diffLines(expected, actual)).join('\n')}`);
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
