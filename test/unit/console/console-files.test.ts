// The console's file table (src/console/console-files.ts) on a real folder: only names in the
// table are answered, whatever the request path; content types, ETag revalidation, HEAD, the
// redirect of /ui, refused methods, and a folder that was never built.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from '../../../src/base/errors.js';
import { consoleAnswer, consoleCsp, loadConsoleFiles } from '../../../src/console/console-files.js';

function folder(): { root: string; ui: string } {
  const root = mkdtempSync(join(tmpdir(), 'baton-console-'));
  const ui = join(root, 'ui');
  mkdirSync(join(ui, 'img'), { recursive: true });
  writeFileSync(join(ui, 'index.html'), '<!doctype html><title>x</title>');
  writeFileSync(join(ui, 'app.js'), 'console.log(1)');
  writeFileSync(join(ui, 'app.js.map'), '{}');
  writeFileSync(join(ui, 'img', 'logo.svg'), '<svg/>');
  writeFileSync(join(root, 'secret.json'), '{"secret": true}');
  // Links out of the folder, of a known type and as a directory: neither is followed.
  symlinkSync(join(root, 'secret.json'), join(ui, 'linked.json'));
  symlinkSync(root, join(ui, 'up'));
  return { root, ui };
}

test('only the folder\'s files of known types are answered, by exact name', () => {
  const { root, ui } = folder();
  try {
    const files = loadConsoleFiles(ui);
    assert.deepEqual([...files.keys()].sort(), ['app.js', 'img/logo.svg', 'index.html']);
    const index = consoleAnswer(files, 'GET', '/ui/', undefined);
    assert.equal(index.status, 200);
    assert.equal(index.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(index.headers['content-security-policy'], consoleCsp);
    assert.equal(index.headers['cache-control'], 'no-cache');
    assert.equal(String(index.body), '<!doctype html><title>x</title>');
    assert.equal(consoleAnswer(files, 'GET', '/ui/app.js', undefined).headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(consoleAnswer(files, 'GET', '/ui/img/logo.svg', undefined).headers['content-type'], 'image/svg+xml');
    for (const path of ['/ui/../secret.json', '/ui/..%2fsecret.json', '/ui/%2e%2e/secret.json', '/ui/linked.json', '/ui/up/secret.json', '/ui/app.js.map',
      '/ui//index.html', '/ui/img/../index.html', '/ui/img%2flogo.svg', '/ui/INDEX.HTML', `/ui/${join(root, 'secret.json')}`]) {
      assert.throws(() => consoleAnswer(files, 'GET', path, undefined), InvalidArgumentError, path);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('ETag revalidation, HEAD, the /ui redirect and refused methods', () => {
  const { root, ui } = folder();
  try {
    const files = loadConsoleFiles(ui);
    const first = consoleAnswer(files, 'GET', '/ui/app.js', undefined);
    const etag = String(first.headers['etag']);
    assert.match(etag, /^"[\w-]{22}"$/);
    const again = consoleAnswer(files, 'GET', '/ui/app.js', etag);
    assert.equal(again.status, 304);
    assert.equal(again.body, null);
    assert.equal(consoleAnswer(files, 'GET', '/ui/app.js', '"other"').status, 200);
    const head = consoleAnswer(files, 'HEAD', '/ui/app.js', undefined);
    assert.equal(head.status, 200);
    assert.equal(head.body, null);
    assert.equal(head.headers['content-length'], 'console.log(1)'.length);
    assert.deepEqual(consoleAnswer(files, 'GET', '/ui', undefined), { status: 308, headers: { location: '/ui/', 'content-length': 0 }, body: null });
    for (const method of ['POST', 'PUT', 'DELETE']) assert.throws(() => consoleAnswer(files, method, '/ui/', undefined), /no such endpoint/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a folder never built: every console path says so', () => {
  const files = loadConsoleFiles(join(tmpdir(), 'baton-console-absent-folder'));
  assert.equal(files.size, 0);
  assert.throws(() => consoleAnswer(files, 'GET', '/ui/', undefined), /the web console is not built/);
});
