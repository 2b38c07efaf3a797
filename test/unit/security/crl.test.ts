// Revocation lists as Baton reads them (src/security/crl.ts): made by openssl for a throwaway CA;
// a list names exactly the revoked serials, only for certificates its own CA issued; a list that
// another CA signed, or whose bytes were changed, or that is cut short, is refused naming the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { certificatesOf, readRevocationLists, revocationOf } from '../../../src/security/crl.js';
import { ensureCa, issueClientCert, revokeCert, writeCrl } from '../../../src/security/certs.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-crl-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
const ca = ensureCa(join(dir, 'ca'));
const alice = issueClientCert(ca, 'alice');
const bob = issueClientCert(ca, 'bob');
const cas = certificatesOf(ca.cert, readFileSync(ca.cert));
const x509 = (file: string) => new X509Certificate(readFileSync(file));

test('a list names the revoked certificates, and only those', () => {
  const empty = writeCrl(ca, join(dir, 'empty.pem'));
  assert.equal(revocationOf(readRevocationLists(empty, readFileSync(empty), cas), x509(alice.cert)), null);
  revokeCert(ca, alice.cert);
  const file = writeCrl(ca, join(dir, 'crl.pem'));
  const lists = readRevocationLists(file, readFileSync(file), cas);
  assert.match(revocationOf(lists, x509(alice.cert)) ?? '', /CN=alice\) is revoked/);
  assert.equal(revocationOf(lists, x509(bob.cert)), null);
  assert.ok(lists[0]!.nextUpdate! > Date.now() / 1000);
});

test('the DER form reads the same', () => {
  const pem = readFileSync(join(dir, 'crl.pem'), 'latin1');
  const der = Buffer.from(pem.replace(/-----[A-Z0-9 ]+-----/g, '').replace(/\s+/g, ''), 'base64');
  const lists = readRevocationLists('crl.der', der, cas);
  assert.notEqual(revocationOf(lists, x509(alice.cert)), null);
});

test("a list signed by another CA, or changed, or cut short, is refused naming the file", () => {
  const other = ensureCa(join(dir, 'other'), 'Other CA');
  const foreign = writeCrl(other, join(dir, 'foreign.pem'));
  assert.throws(() => readRevocationLists(foreign, readFileSync(foreign), cas), /foreign\.pem: not signed by any certificate of the trusted CA file/);

  const pem = readFileSync(join(dir, 'crl.pem'), 'latin1');
  const der = Buffer.from(pem.replace(/-----[A-Z0-9 ]+-----/g, '').replace(/\s+/g, ''), 'base64');
  const changed = Buffer.from(der);
  const serialAt = changed.indexOf(Buffer.from(x509(alice.cert).serialNumber.slice(0, 8), 'hex'));
  assert.ok(serialAt > 0);
  changed[serialAt]! ^= 0x01; // a different serial revoked: the signature no longer holds
  writeFileSync(join(dir, 'changed.der'), changed);
  assert.throws(() => readRevocationLists('changed.der', changed, cas), /changed\.der: not signed/);

  const cut = der.subarray(0, der.length - 20);
  assert.throws(() => readRevocationLists('cut.der', cut, cas), /revocation list cut\.der: .*(truncated|runs past)/);
});

test("a serial revoked by one CA does not revoke another CA's certificate with the same serial", () => {
  const file = join(dir, 'crl.pem');
  const lists = readRevocationLists(file, readFileSync(file), cas);
  // A certificate from the other CA: checkIssued against this CA fails, whatever its serial.
  const other = ensureCa(join(dir, 'other'), 'Other CA');
  const carol = issueClientCert(other, 'carol');
  assert.equal(revocationOf(lists, x509(carol.cert)), null);
});
