// `baton certs`: a small CA for operators and tests, made with the system's openssl
// (src/security/certs.ts says why openssl). Each action prints the files it wrote.
//   baton certs ca --dir DIR [--cn NAME]
//   baton certs member NAME --dir DIR [--cell CELL] [--host H,...]
//   baton certs client NAME --dir DIR
//   baton certs revoke FILE --dir DIR      (then writes DIR/crl.pem)
//   baton certs crl --dir DIR [--out FILE]
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureCa, issueClientCert, issueMemberCert, revokeCert, writeCrl, type CertAuthority } from '../security/certs.js';

const usage = `usage: baton certs ca --dir DIR [--cn NAME]
       baton certs member NAME --dir DIR [--cell CELL] [--host H,...]
       baton certs client NAME --dir DIR
       baton certs revoke CERT-FILE --dir DIR
       baton certs crl --dir DIR [--out FILE]
  A certificate authority in DIR (ca.pem, ca-key.pem: keep the key off the members), and what it signs:
  member   a member's certificate (server and client use, the peer identity baton://CELL/NAME and
           the host names/addresses clients use; default 127.0.0.1,localhost) -> DIR/NAME.pem, NAME-key.pem
  client   a client principal's certificate (the principal is its CN) -> DIR/client-NAME.pem, -key.pem
  revoke   marks a certificate revoked and writes the revocation list DIR/crl.pem; members that read it
           (baton server's client and peer CRL file flags) cut that certificate's connections within a second
  crl      writes the revocation list again (a new nextUpdate, 30 days on)
  --dir DIR    the CA's directory (made by "ca"; the other actions need it)
  --cn NAME    the CA's common name (default "Baton throwaway CA")
  --cell CELL  the member's cell (default cell-1, as --cell of baton server)
  --host H,... host names and IP addresses of the member's client listeners
  --out FILE   where crl writes the list (default DIR/crl.pem)`;

export function certsCommand(args: readonly string[]): number {
  const { values, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      dir: { type: 'string' },
      cn: { type: 'string' },
      cell: { type: 'string' },
      host: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    console.log(usage);
    return 0;
  }
  const [action, subject] = positionals;
  const wanted: Record<string, number> = { ca: 1, member: 2, client: 2, revoke: 2, crl: 1 };
  if (action === undefined || wanted[action] !== positionals.length) {
    console.error(`baton certs: expected ca, member NAME, client NAME, revoke FILE or crl\n\n${usage}`);
    return 2;
  }
  if (values.dir === undefined) {
    console.error(`baton certs ${action}: --dir DIR is required\n\n${usage}`);
    return 2;
  }
  try {
    if (action === 'ca') {
      const ca = ensureCa(values.dir, values.cn);
      console.log(`CA: ${ca.cert} (key ${ca.key})`);
      return 0;
    }
    const ca = existingCa(values.dir);
    if (action === 'member') {
      const hosts = (values.host ?? '127.0.0.1,localhost').split(',').map((h) => h.trim()).filter((h) => h !== '');
      const files = issueMemberCert(ca, values.cell ?? 'cell-1', subject!, hosts);
      console.log(`member ${subject}: ${files.cert} (key ${files.key}), identity baton://${values.cell ?? 'cell-1'}/${subject}`);
    } else if (action === 'client') {
      const files = issueClientCert(ca, subject!);
      console.log(`client ${subject}: ${files.cert} (key ${files.key})`);
    } else if (action === 'revoke') {
      revokeCert(ca, subject!);
      console.log(`revoked ${subject}; revocation list: ${writeCrl(ca, values.out)}`);
    } else {
      console.log(`revocation list: ${writeCrl(ca, values.out)}`);
    }
    return 0;
  } catch (error) {
    console.error(`baton certs ${action}: ${(error as Error).message}`);
    return 1;
  }
}

function existingCa(dir: string): CertAuthority {
  if (!existsSync(join(dir, 'ca.pem')) || !existsSync(join(dir, 'ca-key.pem'))) {
    throw new Error(`no CA in ${dir} (ca.pem and ca-key.pem): make one with baton certs ca --dir ${dir}`);
  }
  return ensureCa(dir);
}
