// `baton keys add|status|rotate`: the key-encryption keys of encryption at rest
// (docs/design/encryption.md). A local command, like `baton audit`: it works on a key file and a
// member's data directory, which is more authority than any API principal has (whoever can read
// the key file and the data directory can read the data anyway).
//   add FILE       puts a new random key first in FILE (created, mode 0600): the active key
//   status --data-dir DIR [key source]   which key id wraps the data key of the store and of each
//                  WAL segment, and which configured keys are still in use (an old key can go once none is)
//   rotate --data-dir DIR key source     rewraps the store's data key under the active key; safe
//                  while the member runs (the data key never changes; its file is replaced by rename).
//                  WAL segments are not rewrapped: new ones take the active key, and old ones are
//                  deleted as the log is released past them (after a checkpoint), retiring the old key.
//   retire --data-dir DIR   removes from db/records.key the data keys the member's background rewrite
//                  (keys/record-rewrite.ts) reported retired: no record names them, durably
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  addRecordKey, dataKeyId, hasRecordKeys, kekId, loadKeyring, openRecordKeys, readRewriteStatus, recordKeyNos, removeRecordKeys, rewrapStoreKey,
  type Keyring, type KeySource, type RewriteStatus,
} from '../keys/index.js';
import { wrappedFiles } from '../node/encryption-status.js';

const usage = `usage: baton keys add FILE
       baton keys status --data-dir DIR [--encryption-key-file FILE | --encryption-key-command CMD]
       baton keys rotate --data-dir DIR (--encryption-key-file FILE | --encryption-key-command CMD) [--data-key]
       baton keys retire --data-dir DIR (--encryption-key-file FILE | --encryption-key-command CMD)
  Key-encryption keys of encryption at rest (baton server --encryption-key-file/-command).
  add     puts a new random 32-byte key (64 hex digits) first in FILE: it wraps every new data key
          once the members read FILE (at start) or after "rotate"; keep the old lines until
          "status" shows no file still uses them
  status  prints the key id that wraps the data key of the store and of each WAL segment
  rotate  rewraps the store's data key(s) under the active (first) key; safe while it runs (WAL
          segments take the active key as they are created; old ones go as the log is released).
          --data-key (a store that seals its records): also adds a new data key to db/records.key;
          the member seals new records with it from its next start, and then seals the old records
          again under it in the background ("status" shows the progress), old records stay readable
  retire  removes from db/records.key the old data keys no record names any more ("status" says
          "retired"); the member needs only the active data key afterwards`;

export function keysCommand(args: readonly string[]): number {
  const { values, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      'data-dir': { type: 'string' },
      'encryption-key-file': { type: 'string' },
      'encryption-key-command': { type: 'string' },
      'data-key': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    console.log(usage);
    return 0;
  }
  const [action, file] = positionals;
  if (action === 'add' && file !== undefined && positionals.length === 2) return addKey(file);
  const dataDir = values['data-dir'];
  if (!['status', 'rotate', 'retire'].includes(action as string) || positionals.length !== 1 || dataDir === undefined) {
    console.error(`baton keys: expected add FILE, status --data-dir DIR, rotate --data-dir DIR or retire --data-dir DIR\n\n${usage}`);
    return 2;
  }
  const source = keySource(values['encryption-key-file'], values['encryption-key-command']);
  if (action !== 'status' && source === null) {
    console.error(`baton keys ${action}: needs --encryption-key-file or --encryption-key-command`);
    return 2;
  }
  const keyring = source === null ? null : loadKeyring(source);
  if (action === 'retire') return retire(dataDir, keyring as Keyring);
  return action === 'status' ? status(dataDir, keyring) : rotate(dataDir, keyring as Keyring, values['data-key'] === true);
}

function addKey(file: string): number {
  const old = existsSync(file) ? readFileSync(file, 'latin1') : '';
  const key = randomBytes(32);
  writeFileSync(file, `${key.toString('hex')}\n${old}`, { mode: 0o600 });
  console.log(`added key ${kekId(key)} first in ${file} (the active key from now on)`);
  return 0;
}

function status(dataDir: string, keyring: Keyring | null): number {
  const files = wrappedFiles(dataDir);
  const inUse = new Set<string>();
  for (const { file, kekId: id } of files) {
    console.log(id === null ? `${file}: plaintext` : `${file}: key ${id}`);
    if (id !== null) inUse.add(id);
  }
  if (keyring !== null) {
    for (const id of keyring.byId.keys()) {
      const role = id === keyring.active.id ? 'active' : 'old';
      console.log(`key ${id} (${role}): ${inUse.has(id) ? 'in use' : 'not in use'}`);
    }
  }
  dataKeyStatus(join(dataDir, 'db'));
  return 0;
}

/** The data keys of a store that seals its records, and the background rewrite's progress. */
function dataKeyStatus(db: string): void {
  const nos = recordKeyNos(db);
  if (nos === null) return;
  const activeNo = Math.max(...nos);
  const rewrite = readRewriteStatus(db);
  const file = join(db, 'records.key');
  for (const no of nos) {
    if (no === activeNo) console.log(`${file}: data key ${no} (active)`);
    else console.log(`${file}: data key ${no} (old): ${oldDataKeyState(no, activeNo, rewrite)}`);
  }
  if (rewrite !== null && rewrite.state !== 'done') {
    console.log(`rewrite: ${rewrite.state}, ${rewrite.rewritten} records sealed again of ${rewrite.scanned} scanned, ` +
      `now in table ${rewrite.table === null ? '-' : tableName(rewrite.table)} (updated ${rewrite.updatedAt})`);
  }
}

function oldDataKeyState(no: number, activeNo: number, rewrite: RewriteStatus | null): string {
  if (rewrite === null || rewrite.activeNo !== activeNo || !rewrite.retiring.includes(no)) {
    return 'in use (the member rewrites its records after its next start)';
  }
  if (rewrite.state === 'done' && rewrite.retired.includes(no)) return 'retired: no record uses it (checkpointed); `baton keys retire` removes it';
  return `in use: being rewritten (${rewrite.rewritten} records so far)`;
}

const tableNames: Record<number, string> = { 0x02: 'policy', 0x03: 'members', 0x04: 'ownership', 0x64: 'dedup', 0x65: 'dedup expiry', 0x68: 'history', 0x6b: 'current values' };

function tableName(table: number): string {
  return tableNames[table] ?? `0x${table.toString(16)}`;
}

function retire(dataDir: string, keyring: Keyring): number {
  const db = join(dataDir, 'db');
  const file = join(db, 'records.key');
  if (!hasRecordKeys(db)) {
    console.error(`baton keys retire: ${db} does not seal its records (no records.key)`);
    return 2;
  }
  // Read-only: unwraps the keys (a wrong keyring is refused naming the file) without taking an open number.
  const keys = openRecordKeys(db, keyring, { create: false, write: false });
  const rewrite = readRewriteStatus(db);
  const activeKeyId = dataKeyId(keys.byNo.get(keys.activeNo) as Buffer);
  const old = [...keys.byNo.keys()].filter((no) => no !== keys.activeNo);
  if (old.length === 0) {
    console.log(`${file}: one data key (${keys.activeNo}); nothing to retire`);
    return 0;
  }
  // Only what the rewrite of this very store (its active data key) reported retired, durably.
  const retired = rewrite !== null && rewrite.state === 'done' && rewrite.activeNo === keys.activeNo && rewrite.activeKeyId === activeKeyId
    ? old.filter((no) => rewrite.retired.includes(no)) : [];
  const removed = removeRecordKeys(db, retired);
  for (const no of removed) console.log(`${file}: removed data key ${no} (no record uses it)`);
  const left = old.filter((no) => !removed.includes(no));
  if (left.length > 0) {
    console.error(`${file}: data key ${left.join(', ')} still in use: the member's background rewrite has not finished ` +
      '(baton keys status shows its progress; it runs while the member runs, from its first start after the rotation)');
    return 1;
  }
  return 0;
}

function rotate(dataDir: string, keyring: Keyring, dataKey: boolean): number {
  const db = join(dataDir, 'db');
  if (hasRecordKeys(db)) {
    const file = join(db, 'records.key');
    // A write open rewraps every data key under the active KEK (and takes an open number: harmless).
    openRecordKeys(db, keyring, { create: false, write: true });
    console.log(`${file}: data keys wrapped by ${keyring.active.id}`);
    if (dataKey) console.log(`${file}: added data key ${addRecordKey(db, keyring)} (new records use it from the member's next start; it then seals the old ones again in the background)`);
    return 0;
  }
  if (dataKey) console.log(`--data-key: ${db} does not seal its records (no records.key)`);
  const file = join(dataDir, 'db', 'state.key');
  const moved = rewrapStoreKey(join(dataDir, 'db'), keyring);
  if (moved === null) console.log(`${file}: absent (the store is not encrypted)`);
  else console.log(`${file}: ${moved.from === moved.to ? `already under ${moved.to}` : `rewrapped ${moved.from} -> ${moved.to}`}`);
  return 0;
}

function keySource(file: string | undefined, command: string | undefined): KeySource | null {
  if (file !== undefined) return { file };
  if (command !== undefined) return { command };
  return null;
}
