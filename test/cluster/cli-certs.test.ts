// `baton certs` as an operator uses it: a CA, a member and a client certificate, a revocation.
// openssl (the tool operators check with) verifies the member and client certificates against the
// CA, and with the revocation list refuses the revoked one only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baton } from './cli-run.js';

function verify(dir: string, cert: string, withCrl: boolean): boolean {
  try {
    execFileSync('openssl', ['verify', '-CAfile', join(dir, 'ca.pem'), ...(withCrl ? ['-crl_check', '-CRLfile', join(dir, 'crl.pem')] : []), cert], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

test('baton certs: ca, member, client, revoke, crl', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-certs-'));
  try {
    assert.equal((await baton(['certs', 'member', 'n1', '--dir', dir])).code, 1, 'no CA yet: refused');
    assert.equal((await baton(['certs', 'ca', '--dir', dir, '--cn', 'Ops CA'])).code, 0);
    const member = await baton(['certs', 'member', 'n1', '--dir', dir, '--cell', 'payments', '--host', 'db1.example,10.0.0.5']);
    assert.equal(member.code, 0, member.stderr);
    assert.match(member.stdout, /identity baton:\/\/payments\/n1/);
    const text = execFileSync('openssl', ['x509', '-in', join(dir, 'n1.pem'), '-noout', '-ext', 'subjectAltName']).toString();
    assert.match(text, /URI:baton:\/\/payments\/n1/);
    assert.match(text, /DNS:db1\.example/);
    assert.match(text, /IP Address:10\.0\.0\.5/);
    assert.equal((await baton(['certs', 'client', 'alice', '--dir', dir])).code, 0);
    assert.equal((await baton(['certs', 'client', 'bob', '--dir', dir])).code, 0);
    assert.equal((await baton(['certs', 'crl', '--dir', dir])).code, 0);
    for (const file of ['n1.pem', 'client-alice.pem', 'client-bob.pem']) assert.ok(verify(dir, join(dir, file), true), file);

    const revoked = await baton(['certs', 'revoke', join(dir, 'client-alice.pem'), '--dir', dir]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal(verify(dir, join(dir, 'client-alice.pem'), true), false, 'alice is revoked');
    assert.equal(verify(dir, join(dir, 'client-bob.pem'), true), true, 'bob is not');
    assert.match(readFileSync(join(dir, 'crl.pem'), 'utf8'), /BEGIN X509 CRL/);

    const usage = await baton(['certs', 'member', '--dir', dir]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /usage: baton certs/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
