// The package as a user gets it: `npm pack` of the built tree, installed from the tarball into an
// empty directory (offline: the dependencies come from npm's cache through a lockfile made from
// Baton's own, so the versions are the tested ones), then the installed `baton` alone runs a dev
// cell in an empty directory on free ports, writes and reads a key through its CLI, and stops on
// SIGTERM. Also: the tarball holds the runtime tree and no tests, every bare import of dist/src is
// a runtime dependency, and `baton/client` imports and type-checks from the installed package.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePorts } from './harness.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  version: string; dependencies: Record<string, string>; devDependencies: Record<string, string>;
};
const scratch = mkdtempSync(join(tmpdir(), 'baton-package-'));
const installDir = join(scratch, 'install');
const bin = join(installDir, 'node_modules', '.bin', 'baton');
let packedFiles: string[] = [];

/** The environment for npm and the installed CLI: none of this run's npm script variables. */
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_(package|lifecycle)_/.test(name)));

function exec(file: string, args: readonly string[], cwd: string, timeoutMs = 120_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

/** A lockfile for an app whose one dependency is the tarball: Baton's own runtime entries. */
function installLock(tarball: string): object {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
  const packages: Record<string, unknown> = {
    '': { name: 'baton-package-test', dependencies: { baton: `file:${tarball}` } },
    'node_modules/baton': {
      version: packageJson.version, resolved: `file:${tarball}`, dependencies: packageJson.dependencies,
      bin: { baton: 'dist/src/cli/main.js' },
    },
  };
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path !== '' && entry.dev !== true) packages[path] = entry;
  }
  return { name: 'baton-package-test', lockfileVersion: 3, requires: true, packages };
}

before(async () => {
  assert.ok(existsSync(join(root, 'dist', 'src', 'client', 'index.d.ts')), 'run `npm run build` first (it emits the client declarations)');
  // --ignore-scripts: prepack would rebuild dist/ under the other test files running from it.
  const pack = await exec('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', scratch], root);
  assert.equal(pack.code, 0, pack.stderr);
  const [packed] = JSON.parse(pack.stdout) as [{ filename: string; files: { path: string }[] }];
  packedFiles = packed.files.map((file) => file.path);
  const tarball = join(scratch, packed.filename);
  mkdirSync(installDir);
  writeFileSync(join(installDir, 'package.json'), JSON.stringify({ name: 'baton-package-test', private: true, dependencies: { baton: `file:${tarball}` } }));
  writeFileSync(join(installDir, 'package-lock.json'), JSON.stringify(installLock(tarball)));
  let install = await exec('npm', ['ci', '--offline', '--no-audit', '--no-fund'], installDir);
  if (install.code !== 0 && /ENOTCACHED/.test(install.stderr)) {
    console.log('npm cache lacks a dependency: installing with --prefer-offline (may use the registry)');
    install = await exec('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], installDir);
  }
  assert.equal(install.code, 0, install.stderr);
});

after(() => rmSync(scratch, { recursive: true, force: true }));

test('the tarball holds the runtime tree: dist/src, the console, the etcd protos, the client types; no tests or sources', () => {
  for (const path of ['dist/src/cli/main.js', 'dist/src/client/index.js', 'dist/src/client/index.d.ts', 'dist/ui/index.html', 'dist/ui/app.js', 'proto/etcd/rpc.proto',
    'proto/etcd/v3lock.proto', 'proto/etcd/v3election.proto', 'README.md', 'package.json']) {
    assert.ok(packedFiles.includes(path), `the tarball lacks ${path}`);
  }
  const strays = packedFiles.filter((path) => !/^(dist\/src\/|dist\/ui\/|proto\/|README\.md$|package\.json$)/.test(path));
  assert.deepEqual(strays, [], 'files outside the runtime tree');
});

test('every package dist/src imports is a runtime dependency', () => {
  const imported = new Set<string>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.js')) {
        const text = readFileSync(path, 'utf8');
        // Static imports and re-exports (tsc keeps a multi-line one across lines), bare imports, import().
        const statements = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
        for (const match of text.matchAll(statements)) {
          const spec = (match[1] ?? match[2] ?? match[3]) as string;
          if (spec.startsWith('node:') || spec.startsWith('.')) continue;
          imported.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0] as string);
        }
      }
    }
  };
  walk(join(installDir, 'node_modules', 'baton', 'dist', 'src'));
  const runtime = new Set(Object.keys(packageJson.dependencies));
  assert.deepEqual([...imported].filter((name) => !runtime.has(name)), [], 'imported but not in dependencies');
  for (const dev of Object.keys(packageJson.devDependencies)) {
    if (dev.startsWith('@types/')) continue; // types only; @types/node also comes with protobufjs
    assert.ok(!existsSync(join(installDir, 'node_modules', dev)), `dev dependency ${dev} was installed`);
  }
});

test('the installed baton is executable and prints the package version', async () => {
  accessSync(bin, constants.X_OK);
  const version = await exec(bin, ['--version'], scratch);
  assert.equal(version.code, 0, version.stderr);
  assert.equal(version.stdout.trim(), packageJson.version);
});

test('baton/client imports and type-checks from the installed package', async () => {
  const imported = await exec(process.execPath, ['--input-type=module', '-e',
    "const m = await import('baton/client'); console.log(typeof m.BatonClient, typeof m.Session)"], installDir);
  assert.equal(imported.code, 0, imported.stderr);
  assert.equal(imported.stdout.trim(), 'function function');
  writeFileSync(join(installDir, 'use-client.ts'), [
    "import { BatonClient, type KeyValue } from 'baton/client';",
    "const client: BatonClient = new BatonClient({ endpoints: ['http://127.0.0.1:7001'] });",
    'const first = async (): Promise<KeyValue | undefined> => (await client.get(\'/k\')).kvs[0];',
    'void first;', '',
  ].join('\n'));
  writeFileSync(join(installDir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, types: ['node'] },
    files: ['use-client.ts'],
  }));
  const checked = await exec(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], installDir);
  assert.equal(checked.code, 0, `${checked.stdout}${checked.stderr}`);
});

test('the installed baton runs a dev cell in an empty directory, serves put/get and its console, stops on SIGTERM', async () => {
  const empty = join(scratch, 'empty');
  mkdirSync(empty);
  const ports = await freePorts(9);
  const dev = spawn(bin, ['dev', '--data-dir', join(scratch, 'data'), '--client-ports', ports.slice(0, 3).join(','),
    '--peer-ports', ports.slice(3, 6).join(','), '--grpc-ports', ports.slice(6, 9).join(',')],
  { cwd: empty, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  dev.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  dev.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  try {
    const ready = await waitFor(() => /Baton dev cell ready: (\S+)/.exec(output)?.[1], dev, 60_000, () => output);
    assert.equal(ready.split(',')[0], `http://127.0.0.1:${ports[0]}`);
    const put = await exec(bin, ['--endpoints', ready, 'put', '/pkg/hello', 'world'], empty);
    assert.equal(put.code, 0, put.stderr);
    const get = await exec(bin, ['get', '/pkg/hello', '-w', 'json', '--endpoints', ready], empty);
    assert.equal(get.code, 0, get.stderr);
    assert.equal((JSON.parse(get.stdout) as { kvs: { value: string }[] }).kvs[0]?.value, 'world');
    // The web console ships in the package: the installed node serves it (docs/console.md).
    const page = await fetch(`${ready.split(',')[0]}/ui/`, { signal: AbortSignal.timeout(10_000) });
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<script type="module" src="app.js"><\/script>/);
    assert.equal((await fetch(`${ready.split(',')[0]}/ui/app.js`, { signal: AbortSignal.timeout(10_000) })).status, 200);
  } finally {
    dev.kill('SIGTERM');
  }
  const code = await exited(dev, 20_000);
  assert.equal(code, 0, output);
  assert.deepEqual(readdirSync(empty), [], 'the dev cell wrote into the working directory');
});

async function waitFor<T>(read: () => T | undefined, child: ChildProcess, timeoutMs: number, say: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (child.exitCode !== null) throw new Error(`baton dev exited ${child.exitCode}:\n${say()}`);
    if (Date.now() > deadline) throw new Error(`not ready within ${timeoutMs} ms:\n${say()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function exited(child: ChildProcess, timeoutMs: number): Promise<number | string> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`baton dev did not stop within ${timeoutMs} ms of SIGTERM`));
    }, timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? signal ?? 'unknown');
    });
  });
}
