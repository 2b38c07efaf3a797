// Certificate revocation lists (etcd's --client-crl-file / --peer-crl-file): which certificates a
// CA has withdrawn. Baton reads the list itself instead of handing it to OpenSSL's handshake check,
// because OpenSSL's check (CRL_CHECK_ALL) refuses every client once the list's nextUpdate passes or
// when an intermediate CA has no list of its own: one stale file would lock everyone out. Here a
// list only ever takes access away: a certificate is refused when a list signed by its issuer names
// its serial. Open connections are cut when a reloaded list names them (tls-files.ts).
import { createPublicKey, verify, X509Certificate } from 'node:crypto';
import { ConfigError } from '../base/config-error.js';

/** One parsed and verified list: the CA that signed it and the serials it revokes. */
export interface RevocationList {
  readonly issuer: X509Certificate;
  readonly serials: ReadonlySet<string>;
  /** Seconds since the epoch; null when the list names none. */
  readonly nextUpdate: number | null;
}

interface Tlv {
  readonly tag: number;
  /** Where the element starts (its tag byte), where its content starts and where it ends. */
  readonly start: number;
  readonly content: number;
  readonly end: number;
}

const tagInteger = 0x02;
const tagBitString = 0x03;
const tagSequence = 0x30;
const tagUtcTime = 0x17;
const tagGeneralizedTime = 0x18;

function readTlv(der: Buffer, at: number, limit: number, what: string): Tlv {
  if (at + 2 > limit) throw new Error(`${what}: truncated at byte ${at}`);
  const tag = der[at]!;
  let length = der[at + 1]!;
  let content = at + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4 || content + count > limit) throw new Error(`${what}: bad length at byte ${at}`);
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + der[content + i]!;
    content += count;
  }
  const end = content + length;
  if (end > limit) throw new Error(`${what}: element at byte ${at} runs past its container`);
  return { tag, start: at, content, end };
}

function expect(tlv: Tlv, tag: number, what: string): Tlv {
  if (tlv.tag !== tag) throw new Error(`${what}: expected tag 0x${tag.toString(16)} at byte ${tlv.start}, found 0x${tlv.tag.toString(16)}`);
  return tlv;
}

/** Hex of a DER INTEGER's magnitude, upper case and without leading zeros (as X509Certificate.serialNumber, normalized). */
function serialHex(der: Buffer, tlv: Tlv): string {
  return normalizeSerial(der.subarray(tlv.content, tlv.end).toString('hex'));
}

export function normalizeSerial(hex: string): string {
  const trimmed = hex.toUpperCase().replace(/^0+/, '');
  return trimmed === '' ? '0' : trimmed;
}

function parseTime(der: Buffer, tlv: Tlv): number {
  const text = der.subarray(tlv.content, tlv.end).toString('latin1');
  const match = tlv.tag === tagUtcTime ? /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(text) : /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  if (match === null) throw new Error(`time at byte ${tlv.start}: "${text}" is not a UTC time`);
  let year = Number(match[1]);
  if (tlv.tag === tagUtcTime) year += year < 50 ? 2000 : 1900;
  return Date.UTC(year, Number(match[2]) - 1, Number(match[3]), Number(match[4]), Number(match[5]), Number(match[6])) / 1000;
}

/** The hash of a signature algorithm OID Baton accepts on a list (ECDSA and RSA PKCS#1 v1.5 with SHA-2). */
function hashOf(oid: string): string {
  const hashes: Record<string, string> = {
    '2a8648ce3d040302': 'sha256', '2a8648ce3d040303': 'sha384', '2a8648ce3d040304': 'sha512',
    '2a864886f70d01010b': 'sha256', '2a864886f70d01010c': 'sha384', '2a864886f70d01010d': 'sha512',
  };
  const hash = hashes[oid];
  if (hash === undefined) throw new Error(`signature algorithm (OID bytes ${oid}) is not one Baton checks (ECDSA or RSA with SHA-256/384/512)`);
  return hash;
}

interface ParsedList {
  readonly tbs: Buffer;
  readonly hash: string;
  readonly signature: Buffer;
  readonly serials: Set<string>;
  readonly nextUpdate: number | null;
}

/** Parses one DER CertificateList (RFC 5280 5.1). */
export function parseCrlDer(der: Buffer): ParsedList {
  const list = expect(readTlv(der, 0, der.length, 'CRL'), tagSequence, 'CRL');
  const tbs = expect(readTlv(der, list.content, list.end, 'tbsCertList'), tagSequence, 'tbsCertList');
  const algorithm = expect(readTlv(der, tbs.end, list.end, 'signatureAlgorithm'), tagSequence, 'signatureAlgorithm');
  const oid = readTlv(der, algorithm.content, algorithm.end, 'signature OID');
  const signature = expect(readTlv(der, algorithm.end, list.end, 'signature'), tagBitString, 'signature');
  if (der[signature.content] !== 0) throw new Error('signature: unused bits in the bit string');

  let at = tbs.content;
  let field = readTlv(der, at, tbs.end, 'tbsCertList');
  if (field.tag === tagInteger) field = readTlv(der, (at = field.end), tbs.end, 'signature'); // version
  expect(field, tagSequence, 'tbsCertList.signature');
  const issuer = expect(readTlv(der, (at = field.end), tbs.end, 'issuer'), tagSequence, 'issuer');
  const thisUpdate = readTlv(der, (at = issuer.end), tbs.end, 'thisUpdate');
  if (thisUpdate.tag !== tagUtcTime && thisUpdate.tag !== tagGeneralizedTime) throw new Error(`thisUpdate: not a time at byte ${thisUpdate.start}`);
  at = thisUpdate.end;
  let nextUpdate: number | null = null;
  const serials = new Set<string>();
  while (at < tbs.end) {
    const next = readTlv(der, at, tbs.end, 'tbsCertList');
    if (next.tag === tagUtcTime || next.tag === tagGeneralizedTime) nextUpdate = parseTime(der, next);
    else if (next.tag === tagSequence) {
      for (let entryAt = next.content; entryAt < next.end;) {
        const entry = expect(readTlv(der, entryAt, next.end, 'revoked entry'), tagSequence, 'revoked entry');
        serials.add(serialHex(der, expect(readTlv(der, entry.content, entry.end, 'serial'), tagInteger, 'serial')));
        entryAt = entry.end;
      }
    }
    at = next.end; // [0] crlExtensions: nothing Baton needs
  }
  return {
    tbs: der.subarray(tbs.start, tbs.end),
    hash: hashOf(der.subarray(oid.content, oid.end).toString('hex')),
    signature: der.subarray(signature.content + 1, signature.end),
    serials,
    nextUpdate,
  };
}

const pemBlock = /-----BEGIN X509 CRL-----([\s\S]*?)-----END X509 CRL-----/g;

/** The lists in a file (PEM, several allowed, or one DER), each verified against one of `cas`. */
export function readRevocationLists(file: string, contents: Buffer, cas: readonly X509Certificate[]): RevocationList[] {
  const text = contents.toString('latin1');
  const ders = text.includes('-----BEGIN X509 CRL-----')
    ? [...text.matchAll(pemBlock)].map((match) => Buffer.from(match[1]!.replace(/\s+/g, ''), 'base64'))
    : [contents];
  return ders.map((der, index) => {
    const where = ders.length > 1 ? `${file} (list ${index + 1})` : file;
    let parsed: ParsedList;
    try {
      parsed = parseCrlDer(der);
    } catch (error) {
      throw new ConfigError(`revocation list ${where}: ${(error as Error).message}`);
    }
    const issuer = cas.find((ca) => {
      try {
        return verify(parsed.hash, parsed.tbs, createPublicKey(ca.publicKey.export({ format: 'pem', type: 'spki' })), parsed.signature);
      } catch {
        return false;
      }
    });
    if (issuer === undefined) throw new ConfigError(`revocation list ${where}: not signed by any certificate of the trusted CA file`);
    return { issuer, serials: parsed.serials, nextUpdate: parsed.nextUpdate };
  });
}

/** The certificates of a PEM bundle (the trusted CA file). */
export function certificatesOf(file: string, pem: Buffer): X509Certificate[] {
  const blocks = pem.toString('latin1').match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  try {
    return blocks.map((block) => new X509Certificate(block));
  } catch (error) {
    throw new ConfigError(`trusted CA file ${file}: ${(error as Error).message}`);
  }
}

/** Why `certificate` is revoked by one of `lists`, or null. */
export function revocationOf(lists: readonly RevocationList[], certificate: X509Certificate): string | null {
  const serial = normalizeSerial(certificate.serialNumber);
  for (const list of lists) {
    if (list.serials.has(serial) && certificate.checkIssued(list.issuer)) {
      return `certificate serial ${serial} (${certificate.subject.replaceAll('\n', ', ')}) is revoked by ${list.issuer.subject.replaceAll('\n', ', ')}`;
    }
  }
  return null;
}
