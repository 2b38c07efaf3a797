// The JSON shapes of api.md's answers, shared by the HTTP routes, the stream frames and watch
// events, so one key-value looks the same on every transport.
import type { KeyValue, RangeResult, TxnOpResult } from './types.js';

export type WireEncoding = 'utf8' | 'base64';

export function kvJson(kv: KeyValue, encoding: WireEncoding): Record<string, unknown> {
  const value = Buffer.from(kv.value.buffer, kv.value.byteOffset, kv.value.byteLength);
  return {
    key: encoding === 'base64' ? Buffer.from(kv.key).toString('base64') : kv.key,
    value: value.toString(encoding === 'base64' ? 'base64' : 'utf8'),
    version: kv.version,
    createRevision: kv.createRevision,
    modRevision: kv.modRevision,
    lease: kv.lease,
  };
}

export function rangeJson(result: RangeResult, encoding: WireEncoding): Record<string, unknown> {
  return {
    revision: result.revision,
    count: result.count,
    more: result.more,
    kvs: result.kvs.map((kv) => kvJson(kv, encoding)),
  };
}

export function txnResultJson(result: TxnOpResult, encoding: WireEncoding): unknown {
  return 'kvs' in result ? rangeJson(result, encoding) : result;
}
