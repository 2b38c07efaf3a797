// The API reference (docs/api/README.md) and the one error table (errorTable in
// src/base/errors.ts) list exactly the same codes with the same HTTP and gRPC statuses, checked
// both ways; the derived HTTP table agrees too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../project-root.js';
import { errorTable, grpcStatusNames, httpStatusByCode } from '../../../src/base/errors.js';

const root = projectRoot(import.meta.url, 'docs/api/README.md');

interface DocumentedRow {
  readonly http: number | null;
  readonly grpc: number;
}

function documentedRows(): Record<string, DocumentedRow> {
  const doc = readFileSync(join(root, 'docs', 'api', 'README.md'), 'utf8');
  const rows: Record<string, DocumentedRow> = {};
  for (const match of doc.matchAll(/^\| (\d{3}|—) \| `([a-z_]+)` \| `([A-Z_]+)` \((\d+)\) \|/gm)) {
    const [, http, code, grpcName, grpcNumber] = match as unknown as [string, string, string, string, string];
    assert.equal(grpcStatusNames[Number(grpcNumber) as keyof typeof grpcStatusNames], grpcName, `the gRPC name of ${code}`);
    assert.equal(rows[code], undefined, `${code} is documented once`);
    rows[code] = { http: http === '—' ? null : Number(http), grpc: Number(grpcNumber) };
  }
  return rows;
}

test('the documented error table equals the code table, both ways', () => {
  const documented = documentedRows();
  const table: Record<string, DocumentedRow> = {};
  for (const [code, row] of Object.entries(errorTable)) table[code] = { http: row.http, grpc: row.grpc };
  for (const code of Object.keys(table)) assert.ok(code in documented, `${code} is in errorTable but not documented`);
  for (const code of Object.keys(documented)) assert.ok(code in table, `${code} is documented but not in errorTable`);
  assert.deepEqual(documented, table);
  const http = Object.fromEntries(Object.entries(documented).flatMap(([code, row]) => (row.http === null ? [] : [[code, row.http]])));
  assert.deepEqual(http, { ...httpStatusByCode });
});
