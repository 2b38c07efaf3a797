// Throwaway certificates for `baton dev --secure`, `baton certs` and the tests: a CA, and
// certificates it signs for members (server and client use, with the member's baton:// identity
// and the loopback names) and for client principals (client use; the principal is the CN and a
// baton://principal/<name> URI). Made with the system's `openssl` (Debian's openssl 3): no npm
// dependency can be audited as easily, and operators know the commands (printed with --verbose).
// EC P-256 keys: fast handshakes, small certificates.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CertFiles {
  readonly cert: string;
  readonly key: string;
}

export interface CertAuthority extends CertFiles {
  readonly dir: string;
}

const days = '825';

function openssl(args: readonly string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '');
    if ((error as { code?: string }).code === 'ENOENT') throw new Error('openssl is not installed (Debian: apt-get install openssl)');
    throw new Error(`openssl ${args[0]} failed: ${stderr.trim() || String(error)}`);
  }
}

/** A new CA in `dir` (ca.pem, ca-key.pem), or the one already there. */
export function ensureCa(dir: string, commonName = 'Baton throwaway CA'): CertAuthority {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ca = { dir, cert: join(dir, 'ca.pem'), key: join(dir, 'ca-key.pem') };
  if (existsSync(ca.cert) && existsSync(ca.key)) return ca;
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', ca.key], dir);
  openssl(['req', '-x509', '-new', '-key', ca.key, '-sha256', '-days', days, '-subj', `/CN=${commonName}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-out', ca.cert], dir);
  return ca;
}

export interface IssueOptions {
  /** Files are `<name>.pem` and `<name>-key.pem` in the CA's directory. */
  readonly name: string;
  readonly commonName: string;
  /** subjectAltName entries, e.g. `URI:baton://cell-1/n1`, `DNS:localhost`, `IP:127.0.0.1`. */
  readonly altNames: readonly string[];
  readonly usage: 'server+client' | 'client';
}

/** A key and a certificate signed by `ca` (replaced if they exist). */
export function issueCert(ca: CertAuthority, options: IssueOptions): CertFiles {
  const files = { cert: join(ca.dir, `${options.name}.pem`), key: join(ca.dir, `${options.name}-key.pem`) };
  const csr = join(ca.dir, `${options.name}.csr`);
  const ext = join(ca.dir, `${options.name}.ext`);
  const usage = options.usage === 'client' ? 'clientAuth' : 'serverAuth,clientAuth';
  writeFileSync(ext, [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    `extendedKeyUsage=${usage}`,
    ...(options.altNames.length > 0 ? [`subjectAltName=${options.altNames.join(',')}`] : []),
    '',
  ].join('\n'));
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', files.key], ca.dir);
  openssl(['req', '-new', '-key', files.key, '-subj', `/CN=${options.commonName}`, '-out', csr], ca.dir);
  openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-days', days, '-sha256',
    '-extfile', ext, '-out', files.cert], ca.dir);
  return files;
}

/**
 * A member's certificate: its identity URI for peers, the loopback names for its client listeners.
 * `fileName` (default the member's name): cells sharing one CA directory need distinct files.
 */
export function issueMemberCert(
  ca: CertAuthority, cell: string, member: string, hosts: readonly string[] = ['127.0.0.1', 'localhost'], fileName = member,
): CertFiles {
  const altNames = [`URI:baton://${cell}/${member}`, ...hosts.map((host) => (/^[\d.]+$|:/.test(host) ? `IP:${host}` : `DNS:${host}`))];
  return issueCert(ca, { name: fileName, commonName: member, altNames, usage: 'server+client' });
}

/** A client principal's certificate (the CN is the principal, as etcd's --client-cert-auth reads it). */
export function issueClientCert(ca: CertAuthority, principal: string): CertFiles {
  return issueCert(ca, { name: `client-${principal}`, commonName: principal, altNames: [`URI:baton://principal/${principal}`], usage: 'client' });
}

/** `openssl ca`'s bookkeeping for the CA in `ca.dir` (index of issued/revoked certificates, list number). */
function caConfig(ca: CertAuthority): string {
  const config = join(ca.dir, 'ca.cnf');
  const index = join(ca.dir, 'index.txt');
  if (!existsSync(index)) writeFileSync(index, '');
  if (!existsSync(join(ca.dir, 'crlnumber'))) writeFileSync(join(ca.dir, 'crlnumber'), '01\n');
  writeFileSync(config, [
    '[ca]', 'default_ca = baton',
    '[baton]',
    `database = ${index}`, `crlnumber = ${join(ca.dir, 'crlnumber')}`,
    `certificate = ${ca.cert}`, `private_key = ${ca.key}`,
    'default_md = sha256', 'default_crl_days = 30',
    '',
  ].join('\n'));
  return config;
}

/** Marks `certFile` (issued by `ca`) revoked in the CA's index; `writeCrl` publishes it. */
export function revokeCert(ca: CertAuthority, certFile: string): void {
  readFileSync(certFile); // a clear error for a missing file before openssl's
  openssl(['ca', '-config', caConfig(ca), '-revoke', certFile], ca.dir);
}

/** The CA's revocation list (every certificate revoked so far), written to `out` (default `<dir>/crl.pem`). */
export function writeCrl(ca: CertAuthority, out = join(ca.dir, 'crl.pem')): string {
  const temporary = `${out}.tmp`;
  openssl(['ca', '-config', caConfig(ca), '-gencrl', '-out', temporary], ca.dir);
  // Renamed into place: a member polling the file never reads half a list.
  renameSync(temporary, out);
  return out;
}
