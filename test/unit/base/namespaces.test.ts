// Namespace resolution (src/base/namespaces.ts), shared by the state machine, the control plane
// and the router: the longest namespace that starts a key wins, else the root; a range touches
// exactly the namespaces that hold one of its keys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isOwnKey, namespaceOf, namespaceProblem, namespacesOfSpan, nestedNamespaces, ownSpans, spanOf } from '../../../src/base/namespaces.js';

const prefixes = ['/', '/payments/', '/payments/eu/', '/tenants/acme/'];
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

test('a key belongs to the longest namespace that starts it, else the root', () => {
  assert.equal(namespaceOf(prefixes, '/payments/42'), '/payments/');
  assert.equal(namespaceOf(prefixes, '/payments/eu/7'), '/payments/eu/');
  assert.equal(namespaceOf(prefixes, '/payments/'), '/payments/');
  assert.equal(namespaceOf(prefixes, '/payments'), '/', 'without the slash it is not in the namespace');
  assert.equal(namespaceOf(prefixes, '/paymentsx/1'), '/');
  assert.equal(namespaceOf(prefixes, '/tenants/acme/x'), '/tenants/acme/');
  assert.equal(namespaceOf(prefixes, '/tenants/other/x'), '/');
  assert.equal(namespaceOf([], '/anything'), '/', 'no namespaces: the root');
  assert.equal(namespaceOf(prefixes, '/locks/payments/'), '/');
});

test('a namespace is a key prefix ending in /', () => {
  assert.equal(namespaceProblem('/payments/'), null);
  assert.equal(namespaceProblem('/'), null);
  assert.match(namespaceProblem('/payments') ?? '', /end with/);
  assert.match(namespaceProblem('payments/') ?? '', /begin with/);
  assert.match(namespaceProblem('/a/../') ?? '', /segment/);
});

test('a single key touches one namespace; a prefix or range every namespace holding one of its keys', () => {
  const touched = (span: Parameters<typeof namespacesOfSpan>[1]): string[] => [...namespacesOfSpan(prefixes, span)].sort();
  assert.deepEqual(touched(spanOf({ key: '/payments/1' })), ['/payments/']);
  assert.deepEqual(touched(spanOf({ key: '/payments/', prefix: true })), ['/payments/', '/payments/eu/'], 'a nested namespace is inside the prefix');
  assert.deepEqual(touched(spanOf({ key: '/payments/eu/', prefix: true })), ['/payments/eu/']);
  assert.deepEqual(touched(spanOf({ key: '/payments/a', prefix: true })), ['/payments/'], 'a prefix inside one namespace stays in it');
  assert.deepEqual(touched(spanOf({ key: '/', prefix: true })), ['/', '/payments/', '/payments/eu/', '/tenants/acme/']);
  assert.deepEqual(touched(spanOf({ key: '/t', prefix: true })), ['/', '/tenants/acme/']);
  // [/payments/x, /q): the rest of /payments/ then back in the root after the namespace ends.
  assert.deepEqual(touched({ start: '/payments/x', end: bytes('/q') }), ['/', '/payments/']);
  // [/payments/a, /payments/b): no boundary inside.
  assert.deepEqual(touched({ start: '/payments/a', end: bytes('/payments/b') }), ['/payments/']);
  // Ends exactly where /payments/eu/ starts: the end is exclusive.
  assert.deepEqual(touched({ start: '/payments/a', end: bytes('/payments/eu/') }), ['/payments/']);
});

test("a namespace's own keys leave out the namespaces nested in it, and only those", () => {
  const all = ['/', '/a/', '/a/b/', '/a/b/c/', '/a/d/', '/ab/', '/z/'];
  const nested = nestedNamespaces(all, '/a/');
  assert.deepEqual(nested, ['/a/b/', '/a/b/c/', '/a/d/']);
  const text = (span: { start: string; end: Uint8Array | null }): [string, string] => [span.start, new TextDecoder().decode(span.end ?? new Uint8Array())];
  // /a/b/c/ lies inside /a/b/'s hole; /ab/ is not under /a/ at all.
  assert.deepEqual(ownSpans('/a/', nested).map(text), [['/a/', '/a/b/'], ['/a/b0', '/a/d/'], ['/a/d0', '/a0']]);
  assert.deepEqual(ownSpans('/a/', []).map(text), [['/a/', '/a0']], 'none nested: the prefix range');
  assert.deepEqual(ownSpans('/a/', ['/a/']).map(text), [['/a/', '/a0']], 'itself is not nested in itself');
  assert.deepEqual(ownSpans('/a/', ['/a/x/']).map(text), [['/a/', '/a/x/'], ['/a/x0', '/a0']]);
  // Every own span resolves to /a/ alone; every key the spans leave out resolves to a nested one.
  for (const span of ownSpans('/a/', nested)) assert.deepEqual([...namespacesOfSpan(all, span)], ['/a/']);
  for (const key of ['/a/', '/a/1', '/a/b', '/a/b0x', '/a/c/1', '/a/d', '/a/e/9']) assert.equal(isOwnKey('/a/', nested, key), true, key);
  for (const key of ['/a/b/', '/a/b/1', '/a/b/c/2', '/a/d/x', '/ab/1', '/b/']) assert.equal(isOwnKey('/a/', nested, key), false, key);
  for (const key of ['/a/1', '/a/b0x', '/a/c/1', '/a/e/9']) {
    assert.ok(ownSpans('/a/', nested).some((s) => key >= s.start && Buffer.compare(Buffer.from(key), Buffer.from(s.end as Uint8Array)) < 0), key);
  }
});
