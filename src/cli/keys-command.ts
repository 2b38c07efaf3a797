// `baton keys add|status|rotate`: the key-encryption keys of encryption at rest
// (docs/design/encryption.md). A local command, like `baton audit`: it works on a key file and a
// member's data directory, which is more authority than any API principal has (whoever can read
// the key file and the data directory can read the data anyway).
//   add FILE       puts a new random key first in FILE (created, mode 0600): the active key
//   status --data-dir DIR [key source]   which key id each encrypted file of DIR is wrapped by,
//                  and which configured keys are still in use (an old key can go once none is)
//   rotate --data-dir DIR key source     rewraps every data key of DIR under the active key; safe
//                  while the member runs (a data key never changes, and its file is replaced by rename)
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { kekId, loadKeyring, rewrapStoreKey, storeKeyId, type Keyring, type KeySource } from '../keys/index.js';

const usage = `usage: baton keys add FILE
       baton keys status --data-dir DIR [--encryption-key-file FILE | --encryption-key-command CMD]
       baton keys rotate --data-dir DIR (--encryption-key-file FILE | --encryption-key-command CMD)
  Key-encryption keys of encryption at rest (baton server --encryption-key-file/-command).
  add     puts a new random 32-byte key (64 hex digits) first in FILE: it wraps every new data key
          once the members read FILE (at start) or after "rotate"; keep the old lines until
          "status" shows no file still uses them
  status  prints the key id each encrypted file of a member's data directory is wrapped by
  rotate  rewraps the member's data keys under the active (first) key; safe while it runs`;

export function keysCommand(args: readonly string[]): number {
  const { values, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      'data-dir': { type: 'string' },
      'encryption-key-file': { type: 'string' },
      'encryption-key-command': { type: 'string' },
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
  if ((action !== 'status' && action !== 'rotate') || positionals.length !== 1 || dataDir === undefined) {
    console.error(`baton keys: expected add FILE, status --data-dir DIR or rotate --data-dir DIR\n\n${usage}`);
    return 2;
  }
  const source = keySource(values['encryption-key-file'], values['encryption-key-command']);
  if (action === 'rotate' && source === null) {
    console.error('baton keys rotate: needs --encryption-key-file or --encryption-key-command');
    return 2;
  }
  const keyring = source === null ? null : loadKeyring(source);
  return action === 'status' ? status(dataDir, keyring) : rotate(dataDir, keyring as Keyring);
}

function addKey(file: string): number {
  const old = existsSync(file) ? readFileSync(file, 'latin1') : '';
  const key = randomBytes(32);
  writeFileSync(file, `${key.toString('hex')}\n${old}`, { mode: 0o600 });
  console.log(`added key ${kekId(key)} first in ${file} (the active key from now on)`);
  return 0;
}

/** The encrypted files of a data directory and the key ids that wrap their data keys. */
function wrappedFiles(dataDir: string): { file: string; kekId: string | null }[] {
  const db = join(dataDir, 'db');
  return [{ file: join(db, 'state.key'), kekId: storeKeyId(db) }];
}

function status(dataDir: string, keyring: Keyring | null): number {
  const files = wrappedFiles(dataDir);
  const inUse = new Set<string>();
  for (const { file, kekId: id } of files) {
    console.log(id === null ? `${file}: absent (the store is not encrypted)` : `${file}: key ${id}`);
    if (id !== null) inUse.add(id);
  }
  if (keyring !== null) {
    for (const id of keyring.byId.keys()) {
      const role = id === keyring.active.id ? 'active' : 'old';
      console.log(`key ${id} (${role}): ${inUse.has(id) ? 'in use' : 'not in use'}`);
    }
  }
  return 0;
}

function rotate(dataDir: string, keyring: Keyring): number {
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
