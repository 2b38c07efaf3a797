// `baton snapshot save FILE`: downloads one node's consistent snapshot of the state machine
// (GET /v1/maintenance/snapshot) and writes it atomically: into FILE.partial-PID, then checked
// twice (the SHA-256 the node sent as a trailer over every byte, and the stream's own entry count
// and checksum, by decoding it), fsynced, and only then renamed over FILE. A download that breaks
// off or fails a check leaves FILE untouched.
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { dirname, resolve } from 'node:path';
import { CorruptFileError } from '../base/errors.js';
import { UnavailableError, defaultEndpoints, errorFromHttp } from '../client/index.js';
import { decodeSnapshot } from '../mvcc/snapshot-stream.js';
import {
  exitCodes,
  parseCommand,
  printJson,
  printTable,
  requirePositionals,
  runWithClient,
  UsageError,
} from './client-command.js';
import { progressBar } from './progress.js';
import { snapshotStatus, type SnapshotStatus } from './snapshot-status.js';
import { snapshotRestoreCommand } from './snapshot-restore.js';
import { keyFlagOptions, keyFlagsHelp, keyringFromFlags } from './key-flags.js';
import { SealedFileWriter, type Keyring } from '../keys/index.js';
import { openBackupFile } from '../snap/index.js';

const snapshotHelp = `usage: baton snapshot save FILE
       baton snapshot status FILE        (or: baton snapshot inspect FILE)
       baton snapshot restore FILE ... (see baton snapshot restore --help)
  save    Saves a consistent snapshot of one node's state machine (every key, retained history,
          leases) to FILE, atomically: FILE appears only once the whole download passed its
          SHA-256 and the snapshot's own entry-count/checksum check. Endpoints are tried in order
          until one answers. On a terminal, a progress bar on stderr. The snapshot is that node's applied state (it may trail the leader).
  status  Checks FILE (from \`baton snapshot save\` or \`etcdctl snapshot save\` against Baton) and
          prints its hash (HashKV at its revision), revision, total keys and size, as
          \`etcdctl snapshot status\` does for etcd's files, with its leases and fencing epoch
          (\`inspect\` is the same).
${keyFlagsHelp}`;

export interface SavedSnapshot {
  readonly file: string;
  readonly endpoint: string;
  readonly bytes: number;
  readonly sha256: string;
  readonly entries: number;
  readonly appliedIndex: number;
  readonly appliedTerm: number;
  readonly revision: number;
  /** The key-encryption key that wraps the file's data key (null: a plaintext file). */
  readonly kekId: string | null;
}

export const snapshotCommand = (args: readonly string[]): Promise<number> =>
  args[0] === 'restore' ? snapshotRestoreCommand(args.slice(1)) : runWithClient(snapshotHelp, args, async () => {
    const { positionals, format, endpoints, values } = parseCommand(args, keyFlagOptions);
    requirePositionals(positionals, 2, 2, '"save", "status" or "inspect" and one FILE');
    const file = resolve(positionals[1] as string);
    const keyring = keyringFromFlags(values);
    if (positionals[0] === 'status' || positionals[0] === 'inspect') return printStatus(snapshotStatus(file, keyring), format);
    if (positionals[0] !== 'save') throw new UsageError(`unknown snapshot action ${positionals[0]}`);
    const saved = await saveSnapshot(endpoints ?? [...defaultEndpoints], file, keyring);
    if (format === 'json') printJson(saved);
    else if (format === 'table') {
      const header = ['FILE', 'BYTES', 'ENTRIES', 'INDEX', 'REVISION', 'SHA256'];
      const { bytes, entries, appliedIndex, revision, sha256 } = saved;
      printTable(header, [[saved.file, bytes, entries, appliedIndex, revision, sha256]]);
    } else {
      const { bytes, entries, appliedIndex, revision, sha256 } = saved;
      console.log(`snapshot saved to ${saved.file}: ${bytes} bytes, ${entries} entries, ` +
        `index ${appliedIndex}, revision ${revision}, sha256 ${sha256} (from ${saved.endpoint})`);
    }
    return exitCodes.ok;
  });

function printStatus(status: SnapshotStatus, format: string | undefined): number {
  if (format === 'json') printJson(status);
  else {
    const { hash, revision, totalKeys, totalSize, appliedIndex, compactRevision, framing, leases, epoch, kekId } = status;
    printTable(['HASH', 'REVISION', 'TOTAL KEYS', 'TOTAL SIZE', 'COMPACT REVISION', 'INDEX', 'LEASES', 'EPOCH', 'SAVED BY', 'ENCRYPTED BY'],
      [[hash, revision, totalKeys, totalSize, compactRevision, appliedIndex, leases, epoch, framing, kekId ?? '-']]);
  }
  return exitCodes.ok;
}

/** Tries each endpoint in turn; throws the last failure when none delivered a checked snapshot. */
export async function saveSnapshot(endpoints: readonly string[], file: string, keyring: Keyring | null = null): Promise<SavedSnapshot> {
  let lastError: Error = new UnavailableError('no endpoint');
  for (const endpoint of endpoints) {
    try {
      return await saveFrom(endpoint.replace(/\/+$/, ''), file, keyring);
    } catch (error) {
      lastError = error instanceof Error ? error : new Error(String(error));
      // A damaged stream from one node says nothing about the others: try the next.
    }
  }
  throw lastError;
}

async function saveFrom(endpoint: string, file: string, keyring: Keyring | null): Promise<SavedSnapshot> {
  const partial = `${file}.partial-${process.pid}`;
  const fd = openSync(partial, 'w+', 0o600);
  let renamed = false;
  try {
    const response = await get(`${endpoint}/v1/maintenance/snapshot`);
    if (response.statusCode !== 200) {
      throw errorFromHttp(response.statusCode ?? 0, await readAll(response));
    }
    const hash = createHash('sha256');
    let bytes = 0;
    const estimate = Number(response.headers['baton-snapshot-estimate-bytes']);
    const progress = progressBar(`snapshot from ${endpoint}`, Number.isFinite(estimate) ? estimate : null);
    // Encrypted as it arrives: the plaintext never reaches the disk.
    const sealer = keyring === null ? null : new SealedFileWriter(keyring, 'baton-snapshot');
    const write = (pieces: readonly Uint8Array[]): void => {
      for (const piece of pieces) writeSync(fd, piece);
    };
    await new Promise<void>((resolveDone, reject) => {
      response.on('data', (chunk: Buffer) => {
        hash.update(chunk);
        bytes += chunk.length;
        write(sealer === null ? [chunk] : sealer.push(chunk));
        progress.add(chunk.length);
      });
      response.once('end', resolveDone);
      response.once('error', reject);
      response.once('aborted', () => reject(new UnavailableError(`${endpoint} broke off the snapshot`)));
    }).finally(() => progress.done());
    const sha256 = hash.digest('hex');
    const sent = response.trailers['baton-snapshot-sha256'];
    if (sent === undefined) {
      throw new UnavailableError(`${endpoint} ended the snapshot without its checksum (incomplete)`);
    }
    if (sent !== sha256) {
      throw new CorruptFileError(partial, 0, `SHA-256 ${sha256} differs from the node's ${sent}`);
    }
    if (sealer !== null) write(sealer.end());
    fsyncSync(fd);
    const entries = sealer === null ? countEntries(fd) : (openBackupFile(partial, keyring).entries as number); // checked: counted
    closeSync(fd);
    renameSync(partial, file);
    renamed = true;
    syncDirectory(dirname(file));
    return {
      file,
      endpoint,
      bytes,
      sha256,
      entries,
      appliedIndex: Number(response.headers['baton-snapshot-index']),
      appliedTerm: Number(response.headers['baton-snapshot-term']),
      revision: Number(response.headers['baton-revision']),
      kekId: sealer?.kekId ?? null,
    };
  } finally {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
    if (!renamed) rmSync(partial, { force: true });
  }
}

/** Decodes the written file: checks the stream's framing, entry count and checksum. */
function countEntries(fd: number): number {
  let entries = 0;
  for (const _entry of decodeSnapshot(readChunks(fd))) entries++;
  return entries;
}

function* readChunks(fd: number): Generator<Uint8Array> {
  const buffer = Buffer.alloc(1024 * 1024);
  for (let position = 0; ; ) {
    const read = readSync(fd, buffer, 0, buffer.length, position);
    if (read === 0) return;
    position += read;
    yield Uint8Array.prototype.slice.call(buffer, 0, read);
  }
}

function syncDirectory(directory: string): void {
  const fd = openSync(directory, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function get(url: string): Promise<IncomingMessage> {
  return new Promise((resolveAnswer, reject) => {
    const request = httpRequest(url, { method: 'GET', timeout: 10_000 }, resolveAnswer);
    request.once('timeout', () => request.destroy(new UnavailableError(`no answer from ${url} in 10 s`)));
    request.once('error', (cause) => {
      const message = cause instanceof UnavailableError ? cause.message : `cannot reach ${url}: ${cause.message}`;
      reject(new UnavailableError(message, {}, { cause }));
    });
    request.end();
  });
}

function readAll(response: IncomingMessage): Promise<string> {
  return new Promise((resolveText) => {
    const parts: Buffer[] = [];
    response.on('data', (chunk: Buffer) => parts.push(chunk));
    response.once('end', () => resolveText(Buffer.concat(parts).toString('utf8')));
    response.once('error', () => resolveText(Buffer.concat(parts).toString('utf8')));
  });
}
