// HPACK (RFC 7541) for the facade's HTTP/2 server: a decoder with the dynamic table (clients index
// their headers: after the first call a gRPC request's headers are mostly one-byte references)
// and an encoder that never indexes (literal fields, no Huffman): the server's answers are a few
// fixed headers, so the peer's table never has to hold anything of ours.
// Any malformed block is a connection error (COMPRESSION_ERROR): the table state is then unknown.
import { huffmanCodes, huffmanLengths } from './huffman-table.js';
import { staticTable } from './static-table.js';

export class HpackError extends Error {
  override name = 'HpackError';
}

/**
 * The Huffman code as a binary tree in one array: node n's children are at 2n (bit 0) and 2n+1
 * (bit 1); a positive entry is the next node, a negative one the symbol -(entry + 1), 0 none.
 */
const huffmanTree: Int32Array = (() => {
  const tree = new Int32Array(2 * 512);
  let nodes = 1;
  for (let symbol = 0; symbol < 256; symbol++) {
    let node = 0;
    const code = huffmanCodes[symbol] as number;
    for (let bit = (huffmanLengths[symbol] as number) - 1; bit >= 0; bit--) {
      const slot = 2 * node + ((code >>> bit) & 1);
      if (bit === 0) {
        tree[slot] = -(symbol + 1);
      } else {
        if (tree[slot] === 0) tree[slot] = nodes++;
        node = tree[slot] as number;
      }
    }
  }
  return tree;
})();

/** Decodes a Huffman string; the padding must be at most 7 one bits (a prefix of EOS). */
export function huffmanDecode(bytes: Uint8Array, start: number, end: number): string {
  const out = Buffer.allocUnsafe(Math.ceil(((end - start) * 8) / 5));
  let length = 0;
  let node = 0;
  let depth = 0;
  let onesOnly = true;
  for (let i = start; i < end; i++) {
    const byte = bytes[i] as number;
    for (let bit = 7; bit >= 0; bit--) {
      const one = (byte >> bit) & 1;
      const next = huffmanTree[2 * node + one] as number;
      if (next === 0) throw new HpackError('invalid Huffman code (EOS or unassigned)');
      if (next < 0) {
        out[length++] = -next - 1;
        node = 0;
        depth = 0;
        onesOnly = true;
      } else {
        node = next;
        depth++;
        onesOnly &&= one === 1;
      }
    }
  }
  if (depth > 7 || !onesOnly) throw new HpackError('invalid Huffman padding');
  return out.toString('latin1', 0, length);
}

export interface HpackLimits {
  /** SETTINGS_HEADER_TABLE_SIZE we advertise: the peer's size updates may not exceed it. */
  readonly tableBytesMax: number;
  /** Decoded header list size (RFC 7541 §4.1 sizes: name + value + 32 per field). */
  readonly listBytesMax: number;
}

/** A decoded header block: fields in order (names are lower case on the wire in HTTP/2). */
export type HeaderList = [name: string, value: string][];

export class HpackDecoder {
  /** Newest first: dynamic index 62 is entry 0. */
  private readonly table: [string, string][] = [];
  private tableBytes = 0;
  private tableBytesMax: number;
  private bytes: Uint8Array = new Uint8Array(0);
  private at = 0;

  constructor(private readonly limits: HpackLimits) {
    this.tableBytesMax = limits.tableBytesMax;
  }

  /** Throws HpackError on a malformed block or one over listBytesMax (after decoding it whole). */
  decode(block: Uint8Array): HeaderList {
    this.bytes = block;
    this.at = 0;
    const fields: HeaderList = [];
    let listBytes = 0;
    let sawField = false;
    while (this.at < block.length) {
      const first = block[this.at] as number;
      let field: [string, string];
      if (first & 0x80) {
        field = this.entry(this.integer(7));
      } else if (first & 0x40) {
        field = this.literal(6);
        this.insert(field);
      } else if (first & 0x20) {
        // A table size update: only before the first field (RFC 7541 §4.2).
        if (sawField) throw new HpackError('a table size update after a header field');
        const size = this.integer(5);
        if (size > this.limits.tableBytesMax) {
          throw new HpackError('a table size update above the advertised size');
        }
        this.tableBytesMax = size;
        this.evict(0);
        continue;
      } else {
        field = this.literal(4); // without indexing, or never indexed: the same to a server
      }
      sawField = true;
      listBytes += field[0].length + field[1].length + 32;
      fields.push(field);
    }
    this.bytes = new Uint8Array(0);
    if (listBytes > this.limits.listBytesMax) {
      throw new HpackError(`a header list of ${listBytes} bytes`);
    }
    return fields;
  }

  private entry(index: number): [string, string] {
    if (index === 0) throw new HpackError('header index 0');
    if (index <= staticTable.length) return staticTable[index - 1] as [string, string];
    const entry = this.table[index - staticTable.length - 1];
    if (entry === undefined) throw new HpackError(`header index ${index} beyond the table`);
    return entry;
  }

  private literal(prefixBits: number): [string, string] {
    const index = this.integer(prefixBits);
    const name = index === 0 ? this.string() : this.entry(index)[0];
    return [name, this.string()];
  }

  private insert(field: [string, string]): void {
    const size = field[0].length + field[1].length + 32;
    this.evict(size);
    // An entry larger than the whole table empties it and is not added (RFC 7541 §4.4).
    if (size > this.tableBytesMax) return;
    this.table.unshift(field);
    this.tableBytes += size;
  }

  private evict(room: number): void {
    while (this.tableBytes + room > this.tableBytesMax && this.table.length > 0) {
      const [name, value] = this.table.pop() as [string, string];
      this.tableBytes -= name.length + value.length + 32;
    }
  }

  /** RFC 7541 §5.1, bounded to 2^28 (nothing legitimate comes close). */
  private integer(prefixBits: number): number {
    const mask = (1 << prefixBits) - 1;
    const first = this.bytes[this.at++];
    if (first === undefined) throw new HpackError('truncated integer');
    let value = first & mask;
    if (value < mask) return value;
    for (let shift = 0; shift <= 21; shift += 7) {
      const byte = this.bytes[this.at++];
      if (byte === undefined) throw new HpackError('truncated integer');
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
    throw new HpackError('integer too large');
  }

  private string(): string {
    const huffman = ((this.bytes[this.at] ?? 0) & 0x80) !== 0;
    const length = this.integer(7);
    const end = this.at + length;
    if (end > this.bytes.length) throw new HpackError('truncated string');
    const text = huffman
      ? huffmanDecode(this.bytes, this.at, end)
      : Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength)
        .toString('latin1', this.at, end);
    this.at = end;
    return text;
  }
}

/** Static-table indexes the encoder uses. */
const statusIndex: Readonly<Record<number, number>> = {
  200: 8, 204: 9, 206: 10, 304: 11, 400: 12, 404: 13, 500: 14,
};
const statusNameIndex = 8;

/**
 * Encodes header fields as literals without indexing (RFC 7541 §6.2.2), names by static index
 * where the table has them; :status by its full static entry where one exists. Values are
 * ASCII (the caller's grpc-message is percent-encoded).
 */
export function encodeHeaders(
  status: number | null,
  fields: readonly (readonly [string, string])[],
): Buffer {
  const parts: number[] = [];
  if (status !== null) {
    const full = statusIndex[status];
    if (full !== undefined) parts.push(0x80 | full);
    else pushLiteral(parts, statusNameIndex, '', String(status));
  }
  for (const [name, value] of fields) {
    pushLiteral(parts, staticNameIndex.get(name) ?? 0, name, value);
  }
  return Buffer.from(parts);
}

const staticNameIndex: ReadonlyMap<string, number> = (() => {
  const map = new Map<string, number>();
  staticTable.forEach(([name], i) => {
    if (!map.has(name)) map.set(name, i + 1);
  });
  return map;
})();

function pushLiteral(parts: number[], nameIndex: number, name: string, value: string): void {
  pushInteger(parts, 4, 0x00, nameIndex);
  if (nameIndex === 0) pushString(parts, name);
  pushString(parts, value);
}

function pushString(parts: number[], text: string): void {
  pushInteger(parts, 7, 0x00, text.length);
  for (let i = 0; i < text.length; i++) parts.push(text.charCodeAt(i) & 0xff);
}

function pushInteger(parts: number[], prefixBits: number, flags: number, value: number): void {
  const mask = (1 << prefixBits) - 1;
  if (value < mask) {
    parts.push(flags | value);
    return;
  }
  parts.push(flags | mask);
  let rest = value - mask;
  while (rest >= 0x80) {
    parts.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 128);
  }
  parts.push(rest);
}
