// The API's limits (../shared/spec/api.md; values in base/limits.ts): breaches are 413 too_large
// with the limit named.
import * as limits from '../../base/limits.js';

export interface ApiLimits {
  readonly keyBytesMax: number;
  readonly valueBytesMax: number;
  readonly txnOpsMax: number;
  readonly requestBytesMax: number;
}

export const defaultApiLimits: ApiLimits = {
  keyBytesMax: limits.keyBytesMax,
  valueBytesMax: limits.valueBytesMax,
  txnOpsMax: limits.txnOpsMax,
  requestBytesMax: limits.requestBytesMax,
};
