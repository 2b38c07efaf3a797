// The sending side of a snapshot transfer: the snapshot file's bytes in bounded chunks, read on
// demand. The transport pulls (an async iterator), so a slow follower slows the reads instead of
// filling memory, and a dropped connection resumes from the offset the receiver reports.
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { basename } from 'node:path';
import { assert } from '../base/assert.js';
import type { SnapshotMeta } from '../raft/index.js';
import { verifySnapshotFile } from './file-io.js';
import { snapDefaults } from './types.js';
import type { SnapshotChunk } from './types.js';

export class SnapshotChunkSource {
  private constructor(
    private readonly handle: FileHandle,
    readonly path: string,
    readonly meta: SnapshotMeta,
    readonly totalBytes: number,
    readonly chunkBytes: number,
    /** The CRC in the file's end record: it chains over every byte, so it names the file. */
    readonly checksum: number,
  ) {}

  get fileName(): string {
    return basename(this.path);
  }

  /** Opens a snapshot file for sending; it is verified first so damage is never shipped. */
  static async open(
    path: string,
    options: { chunkBytes?: number } = {},
  ): Promise<SnapshotChunkSource> {
    const chunkBytes = options.chunkBytes ?? snapDefaults.chunkBytes;
    assert(chunkBytes >= 1, 'chunks hold bytes');
    const { meta, sizeBytes } = await verifySnapshotFile(path);
    const handle = await fsp.open(path, 'r');
    try {
      // The end record is u32 0 | u32 crc | u64 dataBytes: the crc sits 12 bytes from the end.
      const crcBytes = Buffer.alloc(4);
      const { bytesRead } = await handle.read(crcBytes, 0, 4, sizeBytes - 12);
      assert(bytesRead === 4, 'a verified file has an end record');
      const checksum = crcBytes.readUInt32LE(0);
      return new SnapshotChunkSource(handle, path, meta, sizeBytes, chunkBytes, checksum);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** The chunk at `offset` (at most chunkBytes; a fresh buffer the caller may keep). */
  async read(offset: number): Promise<SnapshotChunk> {
    assert(offset >= 0 && offset <= this.totalBytes, 'offset inside the file');
    const length = Math.min(this.chunkBytes, this.totalBytes - offset);
    const bytes = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.handle.read(bytes, done, length - done, offset + done);
      assert(bytesRead > 0, 'the snapshot file did not shrink while being sent');
      done += bytesRead;
    }
    return { offset, bytes, last: offset + length === this.totalBytes };
  }

  /** Chunks from `fromOffset` to the end, one read per pull. */
  async *chunks(fromOffset = 0): AsyncGenerator<SnapshotChunk> {
    let offset = fromOffset;
    for (;;) {
      const chunk = await this.read(offset);
      yield chunk;
      if (chunk.last) return;
      offset += chunk.bytes.length;
    }
  }

  /** The same chunks as plain bytes: what a transport's `chunks: AsyncIterable` wants. */
  async *byteChunks(fromOffset = 0): AsyncGenerator<Uint8Array> {
    for await (const chunk of this.chunks(fromOffset)) yield chunk.bytes;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}
