// `baton audit tail FILE [--lines N]` and `baton audit grep FILE [--event E] [--principal P] [--result R]`:
// read a node's audit log (--audit-log FILE, src/audit), its rotated files (FILE.5 .. FILE.1) and
// then FILE, oldest first, one JSON record per line. A line that is not JSON is reported with its
// file and line number (a torn last line after a crash is the only expected one).
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const usage = `usage: baton audit tail FILE [--lines N]
       baton audit grep FILE [--event E] [--principal P] [--result R]
  Prints the records of a node's audit log (the file baton server writes its audit to), oldest first,
  one JSON object per line; grep keeps the records that match every given field.
  --lines N, -n N  tail: the last N records (default 20)
  --event E      policy, lease-revoke, lock-release, compact, upgrade, membership, denied
  --principal P  the principal that asked ('' anonymous)
  --result R     ok, or an error code (permission_denied, ...)`;

interface AuditLine {
  readonly event?: string;
  readonly principal?: string | null;
  readonly result?: string;
}

export function auditCommand(args: readonly string[]): number {
  const { values, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      lines: { type: 'string', short: 'n' },
      event: { type: 'string' },
      principal: { type: 'string' },
      result: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    console.log(usage);
    return 0;
  }
  const [action, file] = positionals;
  if ((action !== 'tail' && action !== 'grep') || file === undefined || positionals.length !== 2) {
    console.error(`baton audit: expected tail FILE or grep FILE\n\n${usage}`);
    return 2;
  }
  if (!existsSync(file)) {
    console.error(`baton audit: no audit log at ${file}`);
    return 1;
  }
  const lines: string[] = [];
  let bad = 0;
  for (const path of [...[5, 4, 3, 2, 1].map((i) => `${file}.${i}`).filter((p) => existsSync(p)), file]) {
    readFileSync(path, 'utf8').split('\n').forEach((line, i) => {
      if (line === '') return;
      try {
        JSON.parse(line);
        lines.push(line);
      } catch {
        bad++;
        console.error(`baton audit: ${path} line ${i + 1} is not a record (a torn write?)`);
      }
    });
  }
  if (action === 'tail') {
    const count = Number(values.lines ?? '20');
    if (!Number.isSafeInteger(count) || count < 0) {
      console.error('baton audit: --lines takes a whole number');
      return 2;
    }
    for (const line of lines.slice(Math.max(0, lines.length - count))) console.log(line);
    return bad === 0 ? 0 : 1;
  }
  for (const line of lines) {
    const record = JSON.parse(line) as AuditLine;
    if (values.event !== undefined && record.event !== values.event) continue;
    if (values.principal !== undefined && record.principal !== values.principal) continue;
    if (values.result !== undefined && record.result !== values.result) continue;
    console.log(line);
  }
  return bad === 0 ? 0 : 1;
}
