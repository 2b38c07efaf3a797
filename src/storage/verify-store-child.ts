// The child of verify-store.ts: opens the store at argv[2] and reads every key and value of
// every database in it, then prints the count. Writes nothing.
import { readFileSync } from 'node:fs';
import { open } from 'lmdb';

const [path, pageSize] = process.argv.slice(2);
if (path === undefined || pageSize === undefined) throw new Error('usage: verify-store-child PATH PAGE_SIZE');
const options = { keyEncoding: 'binary', encoding: 'binary', compression: false, cache: false } as const;
// An encrypted store's data key arrives on stdin (empty: plaintext).
const encryptionKey = readFileSync(0, 'latin1');
const cipher = encryptionKey === '' ? {} : { encryptionKey };
const root = open<Uint8Array, Uint8Array>({ path, ...options, ...cipher, pageSize: Number(pageSize), noSync: true, maxDbs: 4 });
// The split layout's two database names, as lmdb-engine.ts opens them (with lmdb-js's NUL).
const split = new Set(['kv\0', 'history\0']);
let entries = 0;
let single = false;
for (const { key } of root.getRange({ snapshot: true })) {
  entries++;
  if (!split.has(Buffer.from(key).toString('latin1'))) single = true;
}
if (!single && entries > 0) {
  for (const name of ['kv', 'history']) {
    for (const { value } of root.openDB<Uint8Array, Uint8Array>({ name, ...options }).getRange({ snapshot: true })) {
      entries += value.length >= 0 ? 1 : 0; // the value is read (overflow pages too)
    }
  }
}
await root.close();
process.stdout.write(`entries ${entries}\n`);
