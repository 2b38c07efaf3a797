// What the WAL's hand-off to its sync thread costs the main thread per entry, and what handing
// it the entries' own buffers could save: (a) today's path, as Wal.save and the executor run it
// (encodeEntry copies each entry into a record payload, planFlush frames and CRCs the records into
// one write buffer, encodeRequest copies that buffer into the shared channel); (b) a lower bound
// for "no copies but one": each record framed and CRC'd straight into the shared area from the
// entry's own bytes. CPU time on this thread, medians of 5 runs of 100,000 batches.
//
//   node dist/bench/wal-handoff.bench.js [--entries 1,14,64] [--entry-bytes 330]
import { crc32 } from 'node:zlib';
import { parseArgs } from 'node:util';
import { encodeEntry, encodeHardState } from '../src/wal/codec.js';
import { planFlush, type SegmentCursor } from '../src/wal/plan.js';
import { createSharedChannel, encodeRequest } from '../src/wal/shared-channel.js';
import { RecordType, type PendingRecord } from '../src/wal/types.js';
import { median, table } from '../src/bench/report.js';
import type { Entry } from '../src/raft/index.js';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { entries: { type: 'string' }, 'entry-bytes': { type: 'string' } },
  strict: true,
});
const batchSizes = (values.entries ?? '1,14,64').split(',').map(Number);
const entryBytes = Number(values['entry-bytes'] ?? 330);

const channel = createSharedChannel();
const shared = Buffer.from(channel.data.buffer, channel.data.byteOffset, channel.data.byteLength);
const hardState = { term: 3, vote: 1, commit: 990 };
const config = { walDir: '/nonexistent', segmentBytes: 64 * 1024 * 1024, writeBytesMax: 4 * 1024 * 1024, keys: null };
const cursor: SegmentCursor = { seq: 1, path: '/nonexistent/1', firstIndex: 1, offset: 4096, sizeBytes: 64 * 1024 * 1024, crc: 123, writeBytesMax: 4 * 1024 * 1024, key: null, sealsWrites: false };

function today(entries: readonly Entry[]): void {
  const pending: PendingRecord[] = entries.map((entry) => ({
    frameType: RecordType.entry, payload: encodeEntry(entry), lastIndexAfter: entry.index, hardStateAfter: hardState, snapshotAfter: null,
  }));
  pending.push({ frameType: RecordType.hardState, payload: encodeHardState(hardState), lastIndexAfter: 0, hardStateAfter: hardState, snapshotAfter: null });
  const plan = planFlush(cursor, pending, { lastIndex: 999, hardState, snapshot: null }, config, null);
  encodeRequest(plan.ops, channel.data);
}

function oneCopy(entries: readonly Entry[]): void {
  let at = 64; // request and batch-record headers, written once
  let crc = 123;
  for (const entry of entries) {
    const payloadBytes = 17 + entry.data.length;
    shared.writeUInt32LE(payloadBytes, at + 4);
    shared.writeUInt32LE(RecordType.entry, at + 8);
    const headerCrc = crc32(shared.subarray(at + 4, at + 12), crc);
    shared.writeUInt32LE(headerCrc, at + 12);
    const payload = at + 16;
    shared.writeUInt32LE(entry.index >>> 0, payload);
    shared.writeUInt32LE(Math.floor(entry.index / 2 ** 32), payload + 4);
    shared.writeUInt32LE(entry.term >>> 0, payload + 8);
    shared.writeUInt32LE(Math.floor(entry.term / 2 ** 32), payload + 12);
    shared[payload + 16] = entry.type;
    shared.set(entry.data, payload + 17);
    crc = crc32(shared.subarray(payload, payload + payloadBytes), headerCrc);
    shared.writeUInt32LE(crc, at);
    at = payload + payloadBytes;
  }
}

function usPerBatch(body: (entries: readonly Entry[]) => void, entries: readonly Entry[]): number {
  const batches = 100_000;
  for (let i = 0; i < 20_000; i++) body(entries);
  const started = process.cpuUsage();
  for (let i = 0; i < batches; i++) body(entries);
  const used = process.cpuUsage(started);
  return (used.user + used.system) / batches;
}

const rows: string[][] = [];
for (const count of batchSizes) {
  const entries: Entry[] = Array.from({ length: count }, (_, i) => ({ index: 1000 + i, term: 3, type: 0, data: new Uint8Array(entryBytes).fill(i) }));
  const runs = { today: [] as number[], oneCopy: [] as number[] };
  for (let run = 0; run < 5; run++) {
    runs.today.push(usPerBatch(today, entries));
    runs.oneCopy.push(usPerBatch(oneCopy, entries));
  }
  const [a, b] = [median(runs.today), median(runs.oneCopy)];
  rows.push([String(count), a.toFixed(2), (a / count).toFixed(3), b.toFixed(2), (b / count).toFixed(3), ((a - b) / count).toFixed(3)]);
}
process.stdout.write(`WAL hand-off, ${entryBytes}-byte entries, CPU µs on the calling thread (medians of 5 x 100,000 batches):\n`);
process.stdout.write(`${table(['entries/batch', 'today us/batch', 'today us/entry', 'one copy us/batch', 'one copy us/entry', 'saved us/entry'], rows)}\n`);
