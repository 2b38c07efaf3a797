// `baton snapshot restore FILE ...`: a new cell from a backup, one member's data directory per call
// (as `etcdutl snapshot restore`), or the three dev members at once (--dev). Not a client command:
// it writes data directories and talks to no cell. The work is in src/node/restore.ts.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BatonError, CorruptFileError } from '../base/errors.js';
import { ConfigError } from '../base/config-error.js';
import { keyFlagOptions, keyFlagsHelp, keyringFromFlags } from './key-flags.js';
import { WrongKeyError } from '../keys/index.js';
import { checkBackup, newRestoreNonce, restoreMember, type RestoreMember, type RestoredMember } from '../node/restore.js';

export const restoreHelp = `usage: baton snapshot restore FILE --name NAME --data-dir DIR --initial-cluster N1=URL,N2=URL,...
                              [--restore-nonce N] [--cell ID] [--election-timeout-ms MS] [--old-cluster-id ID]
       baton snapshot restore FILE --dev --data-dir DIR [--restore-nonce N]
  Makes a NEW cell from a backup (baton snapshot save, or etcdctl snapshot save against Baton):
  a new cluster id (the old cell's members and data directories are refused, and vice versa) and
  the next fencing epoch: every revision, lock token and election term of the new cell is above
  every one the old cell issued, also after the backup. Reads and watches below the new cell's
  first revision answer "compacted". Leases keep their remaining TTL plus one election timeout.
  FILE is checked first: damage names the offset, another format version names both versions.
  Per member: run it once for each member of --initial-cluster, with the same FILE and the same
  --restore-nonce (printed by the first call when not given), then start each member with
  \`baton server\` on its DIR and the same --name and --initial-cluster.
  --dev: writes DIR/n1..n3 of the dev cell; then \`BATON_DATA_DIR=DIR npm start\` runs it.
  --old-cluster-id: recorded in the restore record (a backup file does not carry it).
${keyFlagsHelp}`;

const options = {
  name: { type: 'string' },
  'data-dir': { type: 'string' },
  'initial-cluster': { type: 'string' },
  'restore-nonce': { type: 'string' },
  cell: { type: 'string' },
  'election-timeout-ms': { type: 'string' },
  'old-cluster-id': { type: 'string' },
  dev: { type: 'boolean' },
  output: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
  ...keyFlagOptions,
} as const;

/** The server's default election timeout (tick 100 ms x 10 ticks: node/config.ts). */
const electionTimeoutMsDefault = 1_000;

export async function snapshotRestoreCommand(args: readonly string[]): Promise<number> {
  let values;
  let positionals;
  try {
    ({ values, positionals } = parseArgs({ args: [...args], options, strict: true, allowPositionals: true }));
  } catch (error) {
    process.stderr.write(`baton snapshot restore: ${(error as Error).message}\n\n${restoreHelp}\n`);
    return 2;
  }
  if (values.help === true) {
    process.stdout.write(`${restoreHelp}\n`);
    return 0;
  }
  try {
    if (positionals.length !== 1) throw new ConfigError('expected one FILE');
    const dataDir = required(values['data-dir'], 'data-dir');
    const members = values.dev === true ? devMembers(dataDir) : [clusterMember(values, dataDir)];
    const keyring = keyringFromFlags(values);
    const backup = checkBackup(positionals[0] as string, keyring);
    const given = values['restore-nonce'];
    if (given !== undefined && !/^[A-Za-z0-9_-]{1,128}$/.test(given)) throw new ConfigError('--restore-nonce: letters, digits, - and _ (1-128)');
    const nonce = given ?? newRestoreNonce();
    const leaseGraceMs = count(values['election-timeout-ms'], 'election-timeout-ms', electionTimeoutMsDefault);
    const plan = { cellId: values.cell ?? 'cell-1', nonce, leaseGraceMs, oldClusterId: values['old-cluster-id'] ?? null, keyring };
    const restored: RestoredMember[] = [];
    for (const member of members) restored.push(await restoreMember(backup, member, plan));
    report(restored, { nonce, generated: given === undefined, dev: values.dev === true, json: values.output === 'json' });
    return 0;
  } catch (error) {
    if (error instanceof WrongKeyError) {
      process.stderr.write(`baton snapshot restore: ${error.message}\n`);
      return 2;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`baton snapshot restore: ${error.message}\n\n${restoreHelp}\n`);
      return 2;
    }
    if (error instanceof CorruptFileError || error instanceof BatonError) {
      process.stderr.write(`baton snapshot restore: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

function devMembers(dataDir: string): RestoreMember[] {
  // The dev cell's layout (node/dev.ts through ProcessCell): DIR/n1..n3, ids 1..3, cell-1.
  return [1, 2, 3].map((place) => ({ name: `n${place}`, place, dataDir: join(dataDir, `n${place}`) }));
}

function clusterMember(values: { name?: string | undefined; 'initial-cluster'?: string | undefined }, dataDir: string): RestoreMember {
  const name = required(values.name, 'name');
  const names = required(values['initial-cluster'], 'initial-cluster').split(',').map((item) => item.slice(0, Math.max(item.indexOf('='), 0)).trim());
  if (names.some((n) => n === '')) throw new ConfigError('--initial-cluster: expected NAME=URL,...');
  const at = names.indexOf(name);
  if (at < 0) throw new ConfigError(`--initial-cluster does not name ${name}`);
  return { name, place: at + 1, dataDir };
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === '') throw new ConfigError(`--${flag} is required`);
  return value;
}

function count(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < 0 || parsed > 3_600_000) throw new ConfigError(`--${flag}: an integer 0..3600000`);
  return parsed;
}

function report(restored: readonly RestoredMember[], how: { nonce: string; generated: boolean; dev: boolean; json: boolean }): void {
  if (how.json) {
    process.stdout.write(`${JSON.stringify({ nonce: how.nonce, members: restored })}\n`);
    return;
  }
  for (const member of restored) {
    const { restoredFrom: from } = member;
    process.stdout.write(`restored ${member.name} (member ${member.memberId}) into ${member.dataDir}: cluster ${member.clusterId}, epoch ${from.epoch} ` +
      `(backup revision ${from.oldRevision}, epoch ${from.oldEpoch}), ${member.keys} keys, ${member.leases} leases` +
      `${member.sealed ? ', store records sealed (start it with the same key flags)' : ''}\n`);
  }
  if (how.generated && !how.dev) {
    process.stdout.write(`restore nonce ${how.nonce}: pass --restore-nonce ${how.nonce} to every other member's restore\n`);
  }
  if (how.dev) process.stdout.write(`start it with: BATON_DATA_DIR=${join(restored[0]?.dataDir ?? '.', '..')} npm start\n`);
}
