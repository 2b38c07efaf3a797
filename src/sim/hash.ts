// Small deterministic hashes for the checkers: a 53-bit value (two 32-bit lanes) is plenty to
// tell entries apart in one run, and it fits a JavaScript number exactly.

const lane2 = 2 ** 21;

/** Hash of an entry's content: its term, type and data bytes. */
export function hashEntry(term: number, type: number, data: Uint8Array): number {
  let h1 = 0x811c9dc5 ^ term;
  let h2 = 0x9747b28c ^ Math.imul(term, 0x2545f491) ^ type;
  for (let i = 0; i < data.length; i++) {
    const byte = data[i] as number;
    h1 = Math.imul(h1 ^ byte, 0x01000193);
    h2 = Math.imul(h2 ^ byte, 0x5bd1e995);
  }
  return combine(h1, h2 ^ data.length);
}

/** The hash of a log prefix: the previous prefix's hash extended by one entry. */
export function hashChain(previous: number, index: number, entryHash: number): number {
  const lo = previous % lane2;
  const hi = Math.floor(previous / lane2);
  const h1 = Math.imul(hi ^ entryHash, 0x85ebca6b) ^ index;
  const h2 = Math.imul(
    lo ^ Math.floor(entryHash / lane2) ^ Math.imul(index, 0x27d4eb2f),
    0xc2b2ae35,
  );
  return combine(h1, h2);
}

function combine(h1: number, h2: number): number {
  let a = h1 ^ (h2 >>> 15);
  a = Math.imul(a, 0x2c1b3c6d) ^ (a >>> 13);
  let b = h2 ^ (h1 >>> 16);
  b = Math.imul(b, 0x297a2d39) ^ (b >>> 12);
  return (a >>> 0) * lane2 + ((b >>> 0) & (lane2 - 1));
}
