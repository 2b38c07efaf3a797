// Binary etcd keys as Baton key strings (src/base/key-bytes.ts): any bytes round-trip, UTF-8 keys
// are themselves, no two strings stand for the same bytes, and covering prefixes really cover.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bytesToKey, hasNonCanonicalEscapes, keyToBytes, stablePrefixKey } from '../../../src/base/key-bytes.js';
import { keyNameProblem } from '../../../src/base/key-name.js';
import { SeededRandom, randomInt, type Random } from '../../../src/base/random.js';

function randomBytes(random: Random, max: number): Buffer {
  // Mostly the bytes that make UTF-8 hard: lead bytes, continuations, ASCII, the escape range's EF 9E/9F.
  const alphabet = [0x00, 0x2f, 0x61, 0x7f, 0x80, 0x9e, 0x9f, 0xa9, 0xbf, 0xc2, 0xc3, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xff];
  return Buffer.from(Array.from({ length: randomInt(random, 0, max) }, () =>
    randomInt(random, 0, 3) === 0 ? randomInt(random, 0, 255) : alphabet[randomInt(random, 0, alphabet.length - 1)] as number));
}

test('UTF-8 keys are themselves; other bytes become escapes and come back exactly', () => {
  for (const text of ['foo', 'a/b/c', 'é', '日本語', '😀', '']) {
    assert.equal(bytesToKey(Buffer.from(text)), text);
    assert.equal(keyToBytes(text).toString(), text);
  }
  assert.equal(bytesToKey(Buffer.from([0x61, 0x80, 0xff])), 'a\uF780\uF7FF');
  assert.deepEqual(keyToBytes('a\uF780\uF7FF'), Buffer.from([0x61, 0x80, 0xff]));
  // A real U+F7A9 character is escaped byte by byte, so it cannot be taken for byte 0xA9.
  assert.equal(bytesToKey(Buffer.from('\uF7A9')), '\uF7EF\uF79E\uF7A9');
  const random = new SeededRandom(42n);
  for (let i = 0; i < 5000; i++) {
    const bytes = randomBytes(random, 12);
    const key = bytesToKey(bytes);
    assert.deepEqual(keyToBytes(key), bytes, bytes.toString('hex'));
    assert.equal(Buffer.from(key, 'utf8').toString('utf8'), key, 'the key is valid UTF-8 text');
    assert.equal(hasNonCanonicalEscapes(key), false);
  }
});

test('a string that would name the same bytes as another is not a key name', () => {
  // 'é' is C3 A9: written as two escapes it would be a second name for the same etcd key.
  assert.equal(hasNonCanonicalEscapes('/\uF7C3\uF7A9'), true);
  assert.match(keyNameProblem('/\uF7C3\uF7A9') ?? '', /U\+F780/);
  assert.equal(keyNameProblem('/\uF7C3'), null, 'a lone C3 byte is its canonical escape');
  assert.equal(keyNameProblem('/a/b'), null);
});

test('the covering prefix of some bytes begins the key of every extension of them', () => {
  const random = new SeededRandom(7n);
  for (let i = 0; i < 5000; i++) {
    const prefix = randomBytes(random, 8);
    const cover = stablePrefixKey(prefix);
    for (let j = 0; j < 4; j++) {
      const key = bytesToKey(Buffer.concat([prefix, randomBytes(random, 4)]));
      assert.ok(key.startsWith(cover), `${prefix.toString('hex')}: ${JSON.stringify(cover)} does not begin ${JSON.stringify(key)}`);
    }
  }
  assert.equal(stablePrefixKey(Buffer.from('abc')), 'abc');
  assert.equal(stablePrefixKey(Buffer.from([0x61, 0xc3])), 'a', 'C3 may become é');
});

test('UTF-8 keys keep their byte order as Baton strings compared as bytes', () => {
  const keys = ['a', 'a/', 'a/b', 'b', 'é', '日', '😀', 'z'].map((k) => Buffer.from(k)).sort(Buffer.compare);
  const mapped = keys.map((k) => Buffer.from(bytesToKey(k), 'utf8'));
  assert.deepEqual(mapped, [...mapped].sort(Buffer.compare));
});
