// Mutual TLS and node identity on the peer transport, with real certificates made by openssl
// (src/security/certs.ts): members with certificates naming them exchange messages and
// snapshots; a caller with no certificate, a certificate from another CA, or a valid certificate
// of another member is refused before any message is taken (counted and logged), and a listener
// whose certificate names another member is never sent a byte.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect as connectTcp } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as connectTls, createSecureContext } from 'node:tls';
import type { MemberId } from '../../../src/raft/index.js';
import { ensureCa, issueMemberCert, type CertAuthority, type CertFiles } from '../../../src/security/certs.js';
import { TlsMaterial } from '../../../src/security/tls-files.js';
import { encodeHandshake, Channel, protocolVersion } from '../../../src/transport/handshake.js';
import { peerIdentity, type PeerTls } from '../../../src/transport/peer-tls.js';
import { connectAll, heartbeat, startNode, until, type TestNode } from './tcp-helpers.js';

let dir: string;
let ca: CertAuthority;
let otherCa: CertAuthority;
const certs = new Map<string, CertFiles>();

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'baton-peer-tls-'));
  ca = ensureCa(join(dir, 'ca'));
  otherCa = ensureCa(join(dir, 'other-ca'), 'Another CA');
  for (const name of ['n1', 'n2', 'n3']) certs.set(name, issueMemberCert(ca, 'cell-1', name));
  certs.set('rogue-n2', issueMemberCert(otherCa, 'cell-1', 'n2'));
});

after(() => rmSync(dir, { recursive: true, force: true }));

const names: Record<number, string> = { 1: 'n1', 2: 'n2', 3: 'n3' };

function peerTls(files: CertFiles, caFile = ca.cert): PeerTls {
  const material = new TlsMaterial({ certFile: files.cert, keyFile: files.key, caFile }, () => {});
  return {
    context: () => material.context(),
    material: () => material.material(),
    onReload: (listener) => material.onReload(listener),
    identityOf: (id: MemberId) => (names[id] === undefined ? null : peerIdentity('cell-1', names[id] as string)),
  };
}

async function tlsNode(id: MemberId, files: CertFiles, caFile?: string): Promise<TestNode> {
  return startNode(id, { tls: peerTls(files, caFile) });
}

test('members whose certificates name them exchange messages over mutual TLS', async () => {
  const nodes = [await tlsNode(1, certs.get('n1') as CertFiles), await tlsNode(2, certs.get('n2') as CertFiles)];
  connectAll(nodes);
  try {
    nodes[0]?.transport.send([heartbeat(1, 2, 7)]);
    nodes[1]?.transport.send([heartbeat(2, 1, 9)]);
    await until(() => nodes[1]?.received.length === 1 && nodes[0]?.received.length === 1, 'both heartbeats');
    assert.equal(nodes[1]?.transport.stats().rejectedConnections, 0);
  } finally {
    await Promise.all(nodes.map((node) => node.transport.close()));
  }
});

test("a valid certificate of another member cannot speak for this one: refused at the handshake", async () => {
  const n1 = await tlsNode(1, certs.get('n1') as CertFiles);
  // n3's real certificate, claiming to be member 2.
  const impostor = await tlsNode(2, certs.get('n3') as CertFiles);
  n1.transport.addPeer(2, impostor.transport.address());
  impostor.transport.addPeer(1, n1.transport.address());
  try {
    impostor.transport.send([heartbeat(2, 1, 1)]);
    await until(() => n1.transport.stats().rejectedConnections > 0, 'the refusal');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(n1.received.length, 0, 'no message from the impostor was taken');
    assert.ok(n1.warnings.includes('peer connection refused'), n1.warnings.join('; '));
    // And n1 will not send to a listener whose certificate names n3 where it expects n2.
    n1.transport.send([heartbeat(1, 2, 1)]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(impostor.received.length, 0, 'nothing reached the impostor');
  } finally {
    await Promise.all([n1, impostor].map((node) => node.transport.close()));
  }
});

test('no certificate, or one from another CA, is refused in the TLS handshake; plain TCP gets nothing', async () => {
  const n1 = await tlsNode(1, certs.get('n1') as CertFiles);
  const { port } = n1.transport.address();
  try {
    const handshake = encodeHandshake({ version: protocolVersion, channel: Channel.raft, clusterId: 'cluster-a', from: 2, to: 1 });
    // A TLS client without a certificate.
    await new Promise<void>((resolve) => {
      const socket = connectTls({ host: '127.0.0.1', port, ca: readCa(), checkServerIdentity: () => undefined });
      socket.on('secureConnect', () => socket.write(handshake));
      socket.on('error', () => resolve());
      socket.on('close', () => resolve());
    });
    // A client certificate from another CA (with n2's name on it).
    const rogue = certs.get('rogue-n2') as CertFiles;
    await new Promise<void>((resolve) => {
      const socket = connectTls({
        host: '127.0.0.1', port, ca: readCa(), checkServerIdentity: () => undefined,
        secureContext: createSecureContext({ cert: read(rogue.cert), key: read(rogue.key), ca: readCa() }),
      });
      socket.on('secureConnect', () => socket.write(handshake));
      socket.on('error', () => resolve());
      socket.on('close', () => resolve());
    });
    // Plain TCP speaking the peer protocol.
    await new Promise<void>((resolve) => {
      const socket = connectTcp({ host: '127.0.0.1', port }, () => socket.write(handshake));
      socket.on('error', () => resolve());
      socket.on('close', () => resolve());
      setTimeout(() => socket.destroy(), 1000);
    });
    await until(() => n1.transport.stats().rejectedConnections >= 3, 'three refusals');
    assert.equal(n1.received.length, 0);
    assert.ok(n1.warnings.filter((w) => w === 'peer TLS handshake refused').length >= 3, n1.warnings.join('; '));
  } finally {
    await n1.transport.close();
  }
});

function read(path: string): Buffer {
  return readFileSync(path);
}

function readCa(): Buffer {
  return read(ca.cert);
}
