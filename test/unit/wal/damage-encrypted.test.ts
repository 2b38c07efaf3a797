// The WAL damage tests (damage.test.ts) on encrypted segments: every cut, flipped byte, zeroed
// range and missing segment is found and named by file and offset as in plaintext, through the
// CRC chain over the sealed records, before any decryption.
process.env['BATON_TEST_WAL_ENCRYPTED'] = '1';
await import('./damage.test.js');
