// CRC-32 (IEEE, the polynomial zlib and the WAL use) in plain TypeScript, for the deterministic
// core, which may not import node:zlib. Slicing-by-8: about 1 GB/s on this machine, five times the
// byte-at-a-time FNV it replaced in snapshot streams (zlib's native crc32 is faster still, at the
// edges). `crc32(b, crc32(a))` equals `crc32(a ++ b)`.

const tables: Int32Array[] = [];
for (let k = 0; k < 8; k++) tables.push(new Int32Array(256));
const [t0, t1, t2, t3, t4, t5, t6, t7] = tables as [
  Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array,
];
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let bit = 0; bit < 8; bit++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  t0[n] = c;
}
for (let n = 0; n < 256; n++) {
  for (let k = 1; k < 8; k++) {
    const previous = (tables[k - 1] as Int32Array)[n] as number;
    (tables[k] as Int32Array)[n] = (previous >>> 8) ^ (t0[previous & 0xff] as number);
  }
}

/** The CRC-32 of `bytes`, continuing from `seed` (the CRC of the bytes before them). */
export function crc32(bytes: Uint8Array, seed = 0): number {
  let c = ~seed;
  let i = 0;
  const n = bytes.length;
  for (; i + 8 <= n; i += 8) {
    c ^= (bytes[i] as number) | ((bytes[i + 1] as number) << 8) | ((bytes[i + 2] as number) << 16) |
      ((bytes[i + 3] as number) << 24);
    c = (t7[c & 0xff] as number) ^ (t6[(c >>> 8) & 0xff] as number) ^ (t5[(c >>> 16) & 0xff] as number) ^
      (t4[c >>> 24] as number) ^ (t3[bytes[i + 4] as number] as number) ^ (t2[bytes[i + 5] as number] as number) ^
      (t1[bytes[i + 6] as number] as number) ^ (t0[bytes[i + 7] as number] as number);
  }
  for (; i < n; i++) c = (t0[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return ~c >>> 0;
}
