// `baton snapshot save` against small local HTTP servers that misbehave in the ways a download
// can go wrong: a wrong SHA-256 trailer, a stream cut off before its trailer, and bytes damaged
// at the source (the trailer matches, the snapshot's own checksum does not). FILE must appear
// only from a whole, checked download; the next endpoint is tried after a bad one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { saveSnapshot } from '../../../src/cli/snapshot-command.js';
import { MemoryEngine, MvccStore, defaultMvccLimits } from '../../../src/mvcc/index.js';

function snapshotBytes(): Buffer {
  const store = new MvccStore(new MemoryEngine(), defaultMvccLimits);
  return Buffer.concat([...store.snapshot().chunks]);
}

type Behaviour = (res: ServerResponse, bytes: Buffer) => void;

async function serve(behaviour: Behaviour): Promise<{ url: string; server: Server }> {
  const bytes = snapshotBytes();
  const server = createServer((_req, res) => behaviour(res, bytes));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

function send(res: ServerResponse, body: Buffer, sha256: string | null): void {
  res.writeHead(200, {
    'content-type': 'application/octet-stream',
    trailer: 'baton-snapshot-sha256',
    'baton-revision': '1',
    'baton-snapshot-index': '0',
    'baton-snapshot-term': '0',
  });
  res.write(body);
  if (sha256 === null) {
    res.destroy(); // cut off: no trailer, no clean end
    return;
  }
  res.addTrailers({ 'baton-snapshot-sha256': sha256 });
  res.end();
}

const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

const behaviours: Record<string, Behaviour> = {
  good: (res, bytes) => send(res, bytes, sha(bytes)),
  wrongTrailer: (res, bytes) => send(res, bytes, sha(Buffer.from('something else'))),
  cutOff: (res, bytes) => send(res, bytes.subarray(0, bytes.length - 3), null),
  damagedAtSource: (res, bytes) => {
    const damaged = Buffer.from(bytes);
    damaged[damaged.length - 1] = (damaged[damaged.length - 1] as number) ^ 0xff; // the stream's checksum
    send(res, damaged, sha(damaged));
  },
};

test('snapshot save: FILE appears only from a whole, checked download; bad endpoints are skipped', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-snap-save-'));
  const servers = Object.fromEntries(
    await Promise.all(Object.entries(behaviours).map(async ([name, behaviour]) => [name, await serve(behaviour)] as const)),
  );
  try {
    for (const bad of ['wrongTrailer', 'cutOff', 'damagedAtSource']) {
      const file = join(dir, `${bad}.snap`);
      await assert.rejects(saveSnapshot([servers[bad]!.url], file), Error, bad);
      assert.equal(existsSync(file), false, `${bad}: no FILE`);
    }
    assert.deepEqual(readdirSync(dir), [], 'no partial files left');
    const file = join(dir, 'good.snap');
    const saved = await saveSnapshot([servers['cutOff']!.url, servers['good']!.url], file);
    assert.equal(saved.endpoint, servers['good']!.url);
    assert.equal(saved.bytes, readFileSync(file).length);
    assert.equal(sha(readFileSync(file)), saved.sha256);
    assert.deepEqual(readdirSync(dir), ['good.snap']);
  } finally {
    for (const { server } of Object.values(servers)) server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
