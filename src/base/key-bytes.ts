// etcd keys are any bytes; Baton keys are strings. A key's bytes that are not UTF-8 are kept as
// escape characters: byte 0x80..0xFF is U+F780..U+F7FF (private use), one character per byte, as
// Python's surrogateescape does with the one difference that these encode as valid UTF-8. The
// bytes of a real U+F780..U+F7FF character are escaped too, so the mapping is one to one, and a
// key holding escapes must hold them canonically (bytesToKey(keyToBytes(k)) === k, checked by
// keyNameProblem) so no two Baton keys name the same etcd key. Keys that are UTF-8 (nearly all)
// are themselves; binary keys keep their UTF-8 prefixes, and sort among themselves by the escaped
// form, not by their bytes (docs/etcd-compat.md, Keys).

const escapeBase = 0xf700;
/** The escape characters, and any character that would be read as one. */
const escapes = /[\uF780-\uF7FF]/;
const decoder = new TextDecoder('utf-8', { fatal: true });

/** The key string for key bytes (without the leading '/' of Baton's names). */
export function bytesToKey(bytes: Uint8Array): string {
  let text: string | null = null;
  try {
    text = decoder.decode(bytes);
  } catch {
    // not UTF-8: escaped below
  }
  if (text !== null && !escapes.test(text)) return text;
  return escapeBytes(bytes);
}

/** The bytes a key string stands for. */
export function keyToBytes(key: string): Buffer {
  if (!escapes.test(key)) return Buffer.from(key, 'utf8');
  const parts: Buffer[] = [];
  let plain = '';
  for (const char of key) {
    const code = char.codePointAt(0) as number;
    if (code >= 0xf780 && code <= 0xf7ff) {
      if (plain !== '') parts.push(Buffer.from(plain, 'utf8'));
      plain = '';
      parts.push(Buffer.of(code - escapeBase));
    } else {
      plain += char;
    }
  }
  if (plain !== '') parts.push(Buffer.from(plain, 'utf8'));
  return Buffer.concat(parts);
}

/** Whether a key string holds escape characters other than bytesToKey would write. */
export function hasNonCanonicalEscapes(key: string): boolean {
  return escapes.test(key) && bytesToKey(keyToBytes(key)) !== key;
}

/**
 * The key form of the longest prefix of `bytes` whose key form begins the key form of every byte
 * string that starts with `bytes`: cut after the last complete UTF-8 character, since a trailing
 * escaped byte may become part of a character once more bytes follow.
 */
export function stablePrefixKey(bytes: Uint8Array): string {
  let clean = 0;
  let at = 0;
  while (at < bytes.length) {
    const length = charLength(bytes, at);
    if (length > 0) {
      at += length;
      clean = at;
    } else {
      at++;
    }
  }
  return bytesToKey(bytes.subarray(0, clean));
}

function escapeBytes(bytes: Uint8Array): string {
  let out = '';
  let at = 0;
  while (at < bytes.length) {
    const length = charLength(bytes, at);
    if (length > 0) {
      const code = codePoint(bytes, at, length);
      if (code < 0xf780 || code > 0xf7ff) {
        out += String.fromCodePoint(code);
        at += length;
        continue;
      }
    }
    out += String.fromCharCode(escapeBase + (bytes[at] as number)); // always >= 0x80: ASCII is a character
    at++;
  }
  return out;
}

/** The length of the well-formed UTF-8 character at `at` (RFC 3629 table 3-7), or 0. */
function charLength(bytes: Uint8Array, at: number): number {
  const b0 = bytes[at] as number;
  if (b0 < 0x80) return 1;
  const cont = (i: number, lo = 0x80, hi = 0xbf): boolean => {
    const b = bytes[at + i];
    return b !== undefined && b >= lo && b <= hi;
  };
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
  if (b0 === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((b0 >= 0xe1 && b0 <= 0xec) || b0 === 0xee || b0 === 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (b0 === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0; // no surrogates
  if (b0 === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (b0 >= 0xf1 && b0 <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b0 === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

function codePoint(bytes: Uint8Array, at: number, length: number): number {
  const b0 = bytes[at] as number;
  if (length === 1) return b0;
  let code = b0 & (length === 2 ? 0x1f : length === 3 ? 0x0f : 0x07);
  for (let i = 1; i < length; i++) code = (code << 6) | ((bytes[at + i] as number) & 0x3f);
  return code;
}
