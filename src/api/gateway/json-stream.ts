// A request body that carries a stream of JSON objects (etcd's gateway watch and keepalive:
// `{"create_request":...}{"progress_request":{}}...`, as Go's json.Decoder reads them), split
// as the bytes arrive. Each object is bounded; anything that is not a JSON object ends the
// stream, as grpc-gateway's decoder error closes the request side.
import { GatewayInputError } from './errors.js';

const openBrace = 0x7b;
const closeBrace = 0x7d;
const openBracket = 0x5b;
const closeBracket = 0x5d;
const quote = 0x22;
const backslash = 0x5c;

function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

export class JsonObjectStream {
  private pending: Buffer = Buffer.alloc(0);
  /** Scan state inside the object at the start of `pending`. */
  private scanned = 0;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private failed = false;

  constructor(private readonly objectBytesMax: number) {}

  /** The objects completed by `chunk`; throws GatewayInputError once the stream is malformed. */
  push(chunk: Buffer): unknown[] {
    if (this.failed) return [];
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const objects: unknown[] = [];
    let start = 0;
    let at = this.scanned;
    const bytes = this.pending;
    while (at < bytes.length) {
      const byte = bytes[at] as number;
      if (this.depth === 0) {
        if (isSpace(byte)) {
          start = ++at;
          continue;
        }
        if (byte !== openBrace) return this.fail('the request stream holds something other than JSON objects');
        this.depth = 1;
        at++;
        continue;
      }
      at++;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === backslash) this.escaped = true;
        else if (byte === quote) this.inString = false;
      } else if (byte === quote) {
        this.inString = true;
      } else if (byte === openBrace || byte === openBracket) {
        this.depth++;
      } else if (byte === closeBrace || byte === closeBracket) {
        this.depth--;
        if (this.depth === 0) {
          objects.push(parseBody(bytes.subarray(start, at)));
          start = at;
        }
      }
      if (this.depth > 0 && at - start > this.objectBytesMax) {
        return this.fail(`a request message is larger than ${this.objectBytesMax} bytes`);
      }
    }
    this.pending = bytes.subarray(start);
    this.scanned = at - start;
    return objects;
  }

  private fail(message: string): never {
    this.failed = true;
    this.pending = Buffer.alloc(0);
    throw new GatewayInputError(message);
  }
}

/**
 * One JSON body. 64-bit integers written as bare numbers (jsonpb accepts them) are read as their
 * digits, not as doubles that would round them: a lease ID of 19 digits stays exact.
 */
export function parseBody(bytes: Buffer): unknown {
  const text = bytes.toString('utf8');
  try {
    return JSON.parse(/\d{16}/.test(text) ? quoteLongIntegers(text) : text);
  } catch (error) {
    throw new GatewayInputError((error as Error).message);
  }
}

const longInteger = /-?\d{16,}(?![.eE\d])/y;

/** Puts quotes around integer literals of 16 or more digits outside strings. */
function quoteLongIntegers(text: string): string {
  let out = '';
  let inString = false;
  let escaped = false;
  let at = 0;
  while (at < text.length) {
    const c = text[at] as string;
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
      out += c;
      at++;
      continue;
    }
    if (c === '"') {
      inString = true;
      out += c;
      at++;
      continue;
    }
    longInteger.lastIndex = at;
    const match = c === '-' || (c >= '0' && c <= '9') ? longInteger.exec(text) : null;
    if (match !== null && !/[\w.]/.test(text[at - 1] ?? ' ')) {
      out += `"${match[0]}"`;
      at += match[0].length;
      continue;
    }
    out += c;
    at++;
  }
  return out;
}
