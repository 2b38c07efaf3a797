// A short seeded fuzz run inside npm test (issue 21): a real one-node cell on loopback takes a few
// hundred hostile requests over HTTP, the stream and the etcd gRPC facade; every answer must be as
// documented, nothing may hang, the node must survive with its known state unchanged, and its
// memory and connections must come back. Longer runs: npm run fuzz -- --requests N --seed S.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runFuzz } from '../../src/fuzz/run.js';
import { formatReport } from '../../src/fuzz/report.js';

const seed = BigInt(process.env['BATON_SEED'] ?? '21');

test('a short fuzz run finds every answer as documented', { timeout: 120_000 }, async () => {
  const report = await runFuzz({ requests: 400, seed, members: 1, grpc: true, concurrency: 8, caseTimeoutMs: 10_000 });
  const findings = [
    ...report.failures.map((f) => `${f.label}: ${f.problem}\n  request: ${f.request}\n  replay: ${f.replay}`),
    ...report.runProblems,
  ];
  assert.deepEqual(findings, [], `${formatReport(report)}\nreproduce with: npm run fuzz -- --requests 400 --seed ${seed} --members 1`);
  assert.equal(report.cases, 400);
});
